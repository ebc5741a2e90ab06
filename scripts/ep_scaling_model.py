#!/usr/bin/env python3
"""Paper model of expert-parallel decode speed vs ranks (docs/distributed.md).

Per decoded token, every rank reads the replicated weights (attention, dense layers, LM head,
one embedding row; the shared experts once over all ranks) and its share of the routed
experts from memory, then each MoE layer exchanges the pairs' outputs in one allgather
(moex's exact scheme: the K pair outputs of H floats of each token, each rank receiving those
it does not own). Time per token:

  t(R) = (B_repl + B_shared / R + B_routed * imb(R) / R) / BW_mem
         + L_moe * ((R - 1) * alpha + (R - 1) / R * K * H * 4 / BW_net)

(a ring allgather: R - 1 steps of latency alpha; the bytes a rank receives over its link).
imb(R) is the expected max/mean of experts run per rank per step; 1.0 here, the measured 2-rank
median on the qwen3-30b shape is 1.08. Weights at 4.5 bits per parameter (4-bit, group 64).
"""
import argparse

BITS = 4.5 / 8  # bytes per parameter

MODELS = {
    # name: layers, moe layers, hidden, experts, top_k, expert dff, shared dff, dense dff (per
    # dense layer), attention params per layer, vocab (embedding and head, untied)
    "deepseek-v3": dict(layers=61, moe=58, H=7168, E=256, K=8, dff=2048, shared=2048,
                        dense_layers=3, dense_dff=18432,
                        # MLA: q_a 7168x1536, q_b 1536x(128x192), kv_a 7168x576,
                        # kv_b 512x(128x256), o (128x128)x7168
                        attn=7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256
                        + 128 * 128 * 7168, vocab=129280),
    "qwen3-235b-a22b": dict(layers=94, moe=94, H=4096, E=128, K=8, dff=1536, shared=0,
                            dense_layers=0, dense_dff=0,
                            # q 4096x(64x128), k and v 4096x(4x128), o (64x128)x4096
                            attn=4096 * 8192 + 2 * 4096 * 512 + 8192 * 4096, vocab=151936),
    "qwen3-30b-a3b": dict(layers=48, moe=48, H=2048, E=128, K=8, dff=768, shared=0,
                          dense_layers=0, dense_dff=0,
                          attn=2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048, vocab=151936),
}

NETS = {  # name: bytes/s, per-step latency of a ring allgather
    "25 Gb/s Ethernet (TCP)": (25e9 / 8, 25e-6),
    "100 Gb/s (RoCE)": (100e9 / 8, 5e-6),
    "400 Gb/s (InfiniBand NDR)": (400e9 / 8, 3e-6),
}


def parts(m):
    expert = 3 * m["dff"] * m["H"] * BITS
    routed = m["moe"] * m["K"] * expert
    shared = m["moe"] * 3 * m["shared"] * m["H"] * BITS
    repl = (m["layers"] * m["attn"] + m["dense_layers"] * 3 * m["dense_dff"] * m["H"]
            + m["vocab"] * m["H"]) * BITS + m["H"] * 2
    total_experts = m["moe"] * m["E"] * expert
    return repl, shared, routed, total_experts


def per_token(m, ranks, bw_mem, net, imb=1.0):
    repl, shared, routed, _ = parts(m)
    mem = (repl + shared / ranks + routed * imb / ranks) / bw_mem
    bw_net, alpha = net
    comm_bytes = (ranks - 1) / ranks * m["K"] * m["H"] * 4 * m["moe"]
    comm = m["moe"] * (ranks - 1) * alpha + comm_bytes / bw_net if ranks > 1 else 0.0
    return mem, comm, comm_bytes


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bw-mem", type=float, default=200e9, help="memory read B/s per host")
    p.add_argument("--ranks", default="1,2,4,8,16")
    a = p.parse_args()
    ranks = [int(r) for r in a.ranks.split(",")]
    for name, m in MODELS.items():
        repl, shared, routed, experts = parts(m)
        print(f"\n{name}: per token {(repl + shared + routed) / 1e9:.2f} GB "
              f"(replicated {repl / 1e9:.2f}, shared experts {shared / 1e9:.2f}, routed {routed / 1e9:.2f}); "
              f"all experts {experts / 1e9:.1f} GB; allgather payload {m['K'] * m['H'] * 4 / 1e3:.0f} KB "
              f"per MoE layer x {m['moe']}")
        print("| ranks | weights per host (GB) | read per token per rank (GB) | "
              + " | ".join(f"tok/s, {n}" for n in NETS) + " |")
        print("|--:|--:|--:|" + "--:|" * len(NETS))
        for r in ranks:
            held = repl + shared + experts / r
            row = [str(r), f"{held / 1e9:.0f}",
                   f"{(repl + shared / r + routed / r) / 1e9:.2f}"]
            for net in NETS.values():
                mem, comm, _ = per_token(m, r, a.bw_mem, net)
                row.append(f"{1 / (mem + comm):.1f} ({100 * comm / (mem + comm):.0f}% comm)")
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
