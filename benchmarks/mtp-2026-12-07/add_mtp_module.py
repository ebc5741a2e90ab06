# Turns a `moex make-model` checkpoint of L+1 layers into L layers plus an MTP module (its
# last layer, plus random enorm / hnorm / eh_proj / shared_head.norm and a copy of the quantized
# lm_head as shared_head.head): a GLM-4.5-shaped checkpoint with a module, for speed runs.
# Usage: add_mtp_module.py DIR
import json, os, sys
import mlx.core as mx
d = sys.argv[1]
j = json.load(open(d + "/config.json"))
if j.get("num_nextn_predict_layers", 0) == 0:
  j["num_hidden_layers"] -= 1
  j["num_nextn_predict_layers"] = 1
  json.dump(j, open(d + "/config.json", "w"), indent=1)
n = j["num_hidden_layers"]
H = j["hidden_size"]
mx.random.seed(0)
p = f"model.layers.{n}"
extra = {
  p + ".enorm.weight": (1 + 0.1 * mx.random.normal((H,))).astype(mx.float16),
  p + ".hnorm.weight": (1 + 0.1 * mx.random.normal((H,))).astype(mx.float16),
  p + ".eh_proj.weight": (mx.random.normal((H, 2 * H)) / (2 * H) ** 0.5).astype(mx.float16),
  p + ".shared_head.norm.weight": (1 + 0.1 * mx.random.normal((H,))).astype(mx.float16),
}
for f in sorted(os.listdir(d)):
  if f.endswith(".safetensors") and f != "model-mtp.safetensors":
    for k, v in mx.load(os.path.join(d, f)).items():
      if k.startswith("lm_head."):
        extra[p + ".shared_head.head." + k[len("lm_head."):]] = v
mx.save_safetensors(d + "/model-mtp.safetensors", extra)
if os.path.exists(d + "/model.safetensors"):
  os.rename(d + "/model.safetensors", d + "/model-main.safetensors")
idx = d + "/model.safetensors.index.json"
if os.path.exists(idx):
  ix = json.load(open(idx))
  for k in extra: ix["weight_map"][k] = "model-mtp.safetensors"
  json.dump(ix, open(idx, "w"), indent=1)
print("mtp module written after layer", n - 1, sorted(extra))
