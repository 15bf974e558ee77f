#!/usr/bin/env python3
"""Writes recorded.ndjson: a deterministic serving session of two models on
one host, covering every event type the store reduces. Run it again only to
change the recording (then refresh the golden file with go test -update)."""
import json, random

rng = random.Random(7)
T0 = 1764690000000
out = []
def ev(at, typ, data):
    out.append({"type": typ, "at": at, "data": data})

t = T0
ev(t, "catalog.changed", {"models": ["llama-3.2-3b", "qwen2.5-7b"]})
ev(t + 10, "model.load", {"model": "llama-3.2-3b", "phase": "started"})
ev(t + 2410, "model.load", {"model": "llama-3.2-3b", "phase": "finished", "ms": 2400, "weightsBytes": 3_200_000_000})
ev(t + 2500, "model.memory", {"model": "llama-3.2-3b", "weightsBytes": 3_200_000_000, "kvBytes": 0, "prefixCacheBytes": 0})
t += 3000
models = ["llama-3.2-3b"]
req = 0
def requests(at, model, n):
    global req
    for k in range(n):
        req += 1
        finish = rng.choices(["stop", "length", "cancelled", "error"], [80, 12, 6, 2])[0]
        prompt = rng.randint(20, 2000)
        cached = rng.choice([0, 0, prompt // 2, prompt - 1])
        comp = rng.randint(1, 512)
        if finish in ("cancelled", "error") and rng.random() < 0.5:
            queue = round(rng.uniform(0, 50), 1) if rng.random() < 0.5 else None
            ttft = prefill = decode = None
        else:
            queue = round(rng.uniform(0, 120), 1)
            ttft = round(rng.uniform(30, 900), 1)
            prefill = round(rng.uniform(800, 6000), 1)
            decode = round(rng.uniform(20, 90), 1)
        total = round((queue or 0) + (ttft or 0) + comp * 20 + rng.uniform(0, 100), 1)
        ev(at + k, "request.finished", {"model": model, "requestId": f"req-{req:05d}", "finish": finish,
            "promptTokens": prompt, "cachedPromptTokens": cached, "completionTokens": comp,
            "queueMs": queue, "ttftMs": ttft, "prefillTokensPerSecond": prefill,
            "decodeTokensPerSecond": decode, "totalMs": total})

WEIGHTS = {"llama-3.2-3b": 3_200_000_000, "qwen2.5-7b": 7_600_000_000}
hits = misses = 0
for step in range(130):
    at = t + step * 1000
    for m in models:
        active = rng.randint(0, 8)
        ev(at, "scheduler.sample", {"model": m, "active": active, "capacity": 8, "queued": rng.randint(0, 4),
                                    "tokensPerSecond": round(active * rng.uniform(30, 60), 1)})
    if step % 10 == 0:
        hits += rng.randint(0, 30); misses += rng.randint(0, 10)
        for m in models:
            ev(at + 1, "cache.sample", {"model": m, "cache": "kv", "bytes": rng.randint(1, 8) * 64_000_000,
                                        "capacityBytes": 1_024_000_000, "hits": None, "misses": None})
            ev(at + 1, "cache.sample", {"model": m, "cache": "prefix", "bytes": rng.randint(0, 4) * 16_000_000,
                                        "capacityBytes": 256_000_000, "hits": hits, "misses": misses})
            ev(at + 2, "model.memory", {"model": m, "weightsBytes": WEIGHTS[m], "kvBytes": rng.randint(1, 8) * 64_000_000,
                                        "prefixCacheBytes": rng.randint(0, 4) * 16_000_000})
    requests(at + 3, models[-1], 2)
    if step == 5:
        ev(at + 4, "job.state", {"id": "j1", "state": "running"})
    if step == 40:
        # Swap: evict llama to make room for qwen.
        ev(at + 100, "model.unload", {"model": "llama-3.2-3b", "reason": "evicted", "drainMs": 350, "flushed": True, "flushMs": 120})
        ev(at + 110, "model.load", {"model": "qwen2.5-7b", "phase": "started"})
        ev(at + 5110, "model.load", {"model": "qwen2.5-7b", "phase": "finished", "ms": 5000, "weightsBytes": 7_600_000_000})
        ev(at + 5200, "cache.sample", {"model": "llama-3.2-3b", "cache": "kv", "bytes": 1, "capacityBytes": None, "hits": None, "misses": None})
        models = ["qwen2.5-7b"]
        hits = misses = 0
    if step == 60:
        ev(at + 200, "model.load", {"model": "llama-3.2-3b", "phase": "started"})
        ev(at + 300, "model.load", {"model": "llama-3.2-3b", "phase": "failed", "error": "out of memory"})
    if step == 70:
        ev(at + 200, "model.load", {"model": "llama-3.2-3b", "phase": "started"})
        ev(at + 2700, "model.load", {"model": "llama-3.2-3b", "phase": "finished", "weightsBytes": 3_200_000_000})
        models = ["qwen2.5-7b", "llama-3.2-3b"]
    if step == 85:
        ev(at + 500, "model.unload", {"model": "llama-3.2-3b", "reason": "idle", "drainMs": 0, "flushed": False})
        models = ["qwen2.5-7b"]
    ev(at + 5, "metrics.custom", {"anything": 1})

# The same session twice: in the envelope form earlier recordings use, and
# in the host's flat form ({"type","at",...fields}; module events keep data).
CORE = {"model.load", "model.unload", "model.memory", "request.finished", "scheduler.sample", "cache.sample"}
with open("recorded.ndjson", "w") as f:
    for e in out:
        f.write(json.dumps(e, separators=(",", ":")) + "\n")
with open("recorded.flat.ndjson", "w") as f:
    for e in out:
        if e["type"] in CORE:
            e = {"type": e["type"], "at": e["at"], **e["data"]}
        f.write(json.dumps(e, separators=(",", ":")) + "\n")
