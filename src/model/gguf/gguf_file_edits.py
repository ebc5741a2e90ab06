"""GGUF files made from others for gguf_model_test.py: a file dequantized to F32 (llama.cpp's
oracle without quantized matmuls) and a glm4moe file with a NextN layer added.
"""
import numpy as np


def dequantized_copy(src, dst):
    """DST: the GGUF file SRC with every tensor dequantized to F32 by gguf-py (the same
    metadata), for llama.cpp to run without quantized matmuls."""
    import gguf
    r = gguf.GGUFReader(str(src))
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(dst), arch)
    for field in r.fields.values():
        if field.name in ("general.architecture", "general.file_type") or field.name.startswith("GGUF."):
            continue
        vt = field.types[0]
        sub = field.types[-1] if vt == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(field.name, field.contents(), vt, sub_type=sub)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    for t in r.tensors:
        shape = tuple(int(n) for n in reversed(t.shape))
        w.add_tensor(t.name, gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
                     .reshape(shape))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


def with_nextn_layer(src, dst):
    """DST: the F32 glm4moe file SRC plus a NextN (multi-token prediction) layer as GLM's
    converter writes one: block_count + 1, nextn_predict_layers 1, blk.L.* holding a copy of the
    last layer's tensors and the nextn.* projections and norms (values arbitrary: nothing that
    decodes one token per step reads them)."""
    import gguf
    r = gguf.GGUFReader(str(src))
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(dst), arch)
    layers = int(r.fields[f"{arch}.block_count"].contents())
    for field in r.fields.values():
        if field.name == "general.architecture" or field.name.startswith("GGUF."):
            continue
        vt = field.types[0]
        sub = field.types[-1] if vt == gguf.GGUFValueType.ARRAY else None
        value = layers + 1 if field.name == f"{arch}.block_count" else field.contents()
        w.add_key_value(field.name, value, vt, sub_type=sub)
    w.add_nextn_predict_layers(1)
    last = f"blk.{layers - 1}."
    hidden = int(r.fields[f"{arch}.embedding_length"].contents())
    rng = np.random.default_rng(0)
    for t in r.tensors:
        if t.tensor_type != gguf.GGMLQuantizationType.F32:
            raise ValueError(f"{src}: {t.name} is not F32")
        w.add_tensor(t.name, np.array(t.data))
        if t.name.startswith(last):
            w.add_tensor(f"blk.{layers}." + t.name[len(last):], np.array(t.data))
    for name, shape in (("nextn.eh_proj.weight", (hidden, 2 * hidden)),
                        ("nextn.enorm.weight", (hidden,)), ("nextn.hnorm.weight", (hidden,)),
                        ("nextn.shared_head_norm.weight", (hidden,))):
        w.add_tensor(f"blk.{layers}.{name}", rng.standard_normal(shape).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst
