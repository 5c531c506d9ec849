#!/usr/bin/env python3
# bench/train/check_step_cpu.py - one training step of peer.py against the
# compiled step, on the CPU, in fp32 (both sides).
#
# usage: check_step_cpu.py [--model kimi-tiny] [--moe-run build/bin/moe-run]
#            [--batch-size 2] [--seq-len 64] [--lr 0.01] [--work DIR]
#
# It draws the weights (torch_model.init_params, with the router biases and
# the AttnRes queries moved off zero so that their roles show), packs them in
# the .mlir's parameter order (the packed layout of docs/Training.md), runs
# `moe-run MODEL.mlir --build-training-step --entry=<model>_train_step` on
# them with zero moments at step t = 1 (the CPU back end JIT-compiles the
# whole step: about 6 minutes for kimi-tiny on 2 cores), then peer.py's
# Trainer.step on the same weights and tokens, and compares the loss, the
# gradient (recovered from the new first moment: m = (1 - beta1) c g, c the
# clip factor each side reports), the new parameters and the new router
# biases. Exit status 1 when one of them is outside its tolerance.
#
# The gradient norms are printed side by side and not required to agree:
# the compiled step sums the squares in fp32 in one sequential pass, which
# loses the small terms once the sum is large (its value is reproduced here
# by numpy's fp32 cumsum); peer.py's clip_grad_norm_ sums per tensor.

import argparse
import importlib.util
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_peer():
    spec = importlib.util.spec_from_file_location("train_peer", os.path.join(HERE, "peer.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="kimi-tiny")
    ap.add_argument("--moe-run", default=os.path.join(ROOT, "build", "bin", "moe-run"))
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default="/tmp/check-step-cpu")
    args = ap.parse_args()
    tp = load_peer()
    tm = tp.tm
    config, mlir = tm.model_paths(args.model)
    cfg = tm.load_config(config)
    specs = tm.param_specs(cfg)
    os.makedirs(args.work, exist_ok=True)

    weights = tm.init_params(cfg, args.seed, "cpu")
    gen = torch.Generator().manual_seed(args.seed + 7)
    for name in weights:
        if name.endswith(".router_bias") or name.endswith("_res.query"):
            weights[name] = torch.randn(weights[name].shape, generator=gen) * 0.05
    packed = np.concatenate([weights[n].numpy().astype(np.float32).reshape(-1)
                             for n, _, _ in specs])
    B, T = args.batch_size, args.seq_len
    rng = np.random.default_rng(args.seed + 1)
    window = rng.integers(0, cfg.vocab, (B, T + 1)).astype(np.int32)
    tokens, labels = window[:, :-1].copy(), window[:, 1:].copy()
    beta1, beta2, eps, wd, clip = 0.9, 0.95, 1e-8, 0.1, 1.0
    hyper = np.array([args.lr, beta1, beta2, eps, wd, clip, 1 / (1 - beta1), 1 / (1 - beta2)],
                     dtype=np.float32)
    files = {}
    for key, array in (("p", packed), ("m", np.zeros_like(packed)), ("v", np.zeros_like(packed)),
                       ("tok", tokens), ("lab", labels), ("hyper", hyper)):
        files[key] = os.path.join(args.work, key + ".npy")
        np.save(files[key], array)
    out = os.path.join(args.work, "compiled")
    entry = f"{cfg.name}_train_step"
    cmd = [args.moe_run, mlir, "--build-training-step", f"--entry={entry}"]
    for key in ("p", "m", "v", "tok", "lab", "hyper"):
        cmd += ["-i", files[key]]
    cmd += ["-o", out]
    print(" ".join(cmd), flush=True)
    with open(os.path.join(args.work, "moe-run.log"), "w") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
    c_loss = float(np.load(os.path.join(out, "result0.npy")))
    c_params, c_m = (np.load(os.path.join(out, f"result{i}.npy")) for i in (1, 2))
    c_norm = float(np.load(os.path.join(out, "result4.npy"))[0])

    hp = argparse.Namespace(steps=1, lr=args.lr, min_lr=args.lr / 10, warmup=0, schedule="wsd",
                            decay_frac=0.2, weight_decay=wd, clip=clip, beta1=beta1, beta2=beta2,
                            eps=eps)
    device = torch.device("cpu")
    impl, _ = tm.make_impl(device, "chunk", "loop", None, torch.float32)
    trainer = tp.Trainer(cfg, weights, device, torch.float32, impl, hp,
                         tp.read_balancers(cfg, config, mlir))
    record = tp.new_record()
    trainer.step(torch.from_numpy(tokens), torch.from_numpy(labels), args.lr, record=record)
    t_loss, t_norm = record["loss"][0], record["grad_norm"][0]

    failures = []
    rel = abs(c_loss - t_loss) / abs(c_loss)
    print(f"loss: compiled {c_loss:.7f}, peer {t_loss:.7f}, relative difference {rel:.2e}")
    if rel > 2e-5:
        failures.append("loss")
    offset, worst_grad, worst_param, worst_bias = 0, (0.0, ""), (0.0, ""), (0.0, "")
    c_sq, t_sq = [], []
    for name, shape, _ in specs:
        size = int(np.prod(shape))
        part = slice(offset, offset + size)
        offset += size
        new = trainer.params[name].detach().numpy().reshape(-1)
        if tp.is_buffer(name):
            err = float(np.abs(c_params[part] - new).max())
            worst_bias = max(worst_bias, (err, name))
            continue
        state = trainer.opt.state[trainer.params[name]]
        g_c = c_m[part] / (1 - beta1) / min(1.0, clip / (c_norm + 1e-6))
        g_t = state["exp_avg"].numpy().reshape(-1) / (1 - beta1) / min(1.0, clip / (t_norm + 1e-6))
        c_sq.append(g_c * g_c)
        t_sq.append(g_t.astype(np.float64) ** 2)
        scale = max(float(np.linalg.norm(g_t)), 1e-30)
        worst_grad = max(worst_grad, (float(np.linalg.norm(g_c - g_t)) / scale, name))
        # A wrong weight-decay choice would move the median by lr * wd * |p|.
        worst_param = max(worst_param, (float(np.median(np.abs(c_params[part] - new))), name))
    sequential = float(np.sqrt(np.cumsum(np.concatenate(c_sq), dtype=np.float32)[-1]))
    exact = float(np.sqrt(np.concatenate(t_sq).sum()))
    print(f"gradient: largest ||g_compiled - g_peer|| / ||g_peer|| of a parameter "
          f"{worst_grad[0]:.2e} ({worst_grad[1]})")
    print(f"new parameters: largest median |compiled - peer| {worst_param[0]:.2e} "
          f"({worst_param[1]}; lr * wd * |p| is about {args.lr * wd * 0.02:.0e} for a "
          f"weight, {args.lr * wd:.0e} for a norm weight)")
    print(f"new router biases: largest |compiled - peer| {worst_bias[0]:.2e} ({worst_bias[1]})")
    print(f"gradient norm: compiled {c_norm:.6f} (its gradient summed sequentially in fp32: "
          f"{sequential:.6f}), peer {t_norm:.6f} (the same gradient in fp64: {exact:.6f})")
    if worst_grad[0] > 1e-4:
        failures.append("gradient")
    if worst_param[0] > 1e-5:
        failures.append("parameters")
    if worst_bias[0] > 1e-6:
        failures.append("router biases")
    for f in failures:
        print(f"error: the {f} differ")
    print("ok" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
