#!/usr/bin/env python3
"""Writes the two-poll expositions of each engine the scraper reads, in the
engines' own names, types, labels and bucket bounds, written from their
sources (not captured from a running engine: none runs on these machines):

  vllm-1.txt, vllm-2.txt      vLLM's V1 engine (vllm/v1/metrics/loggers.py
                              of recent releases, after v0.11 renamed the
                              per-token histogram vllm:inter_token_latency_seconds:
                              beside it vllm:request_time_per_output_token_seconds,
                              the finished_reason error, the cached prompt
                              token counter)
  sglang-1.txt, sglang-2.txt  SGLang (python/sglang/srt/metrics/collector.py,
                              0.5 series: scheduler gauges per dp_rank,
                              tokenizer counters and histograms)
  sglang_-1.txt, sglang_-2.txt  the same in sglang_ names, as some releases
                              and routers (sgl-router's /engine_metrics)
                              serve them
  llamacpp-1.txt, llamacpp-2.txt  llama.cpp's server with --metrics
                              (tools/server: llamacpp: counters and gauges,
                              no histograms, no model label)

Each second poll is the first 5 s later with the traffic below. Run it again
only to change them; the tests hold the values."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def fmt(v):
    if v == float("inf"):
        return "+Inf"
    return repr(float(v))


def labels(d):
    return "{" + ",".join(f'{k}="{v}"' for k, v in d.items()) + "}" if d else ""


class Page:
    def __init__(self):
        self.lines = []

    def family(self, name, typ, help):
        self.lines.append(f"# HELP {name} {help}")
        self.lines.append(f"# TYPE {name} {typ}")

    def sample(self, name, lab, v):
        self.lines.append(f"{name}{labels(lab)} {fmt(v)}")

    def histogram(self, name, help, lab, bounds, counts, total):
        """counts: per bucket (len(bounds)+1), written cumulative."""
        self.family(name, "histogram", help)
        run = 0
        for b, c in zip(bounds + [float("inf")], counts):
            run += c
            self.sample(name + "_bucket", {**lab, "le": fmt(b)}, run)
        self.sample(name + "_count", lab, run)
        self.sample(name + "_sum", lab, total)

    def write(self, path):
        with open(os.path.join(HERE, path), "w") as f:
            f.write("\n".join(self.lines) + "\n")


def spread(bounds, at):
    """Per-bucket counts from {bucket index: count}."""
    return [at.get(i, 0) for i in range(len(bounds) + 1)]


def add(a, b):
    return [x + y for x, y in zip(a, b)]


def build_1_2_5(limit):
    out, e = [], 0
    while True:
        for m in (1, 2, 5):
            if m * 10**e > limit:
                return out
            out.append(m * 10**e)
        e += 1


# vLLM's bounds (vllm/v1/metrics/loggers.py).
V_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
          20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
V_ITL = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
         40.0, 80.0]
V_PHASE = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
           240.0, 480.0, 960.0, 1920.0, 7680.0]
V_LEN = build_1_2_5(8192)


def vllm(poll):
    p = Page()
    lab = {"engine": "0", "model_name": LLAMA}
    p.family("python_gc_objects_collected_total", "counter", "Objects collected during gc")
    p.sample("python_gc_objects_collected_total", {"generation": "0"}, 12853)
    p.family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.")
    p.sample("vllm:num_requests_running", lab, [12, 14][poll])
    p.family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.")
    p.sample("vllm:num_requests_waiting", lab, 3)
    p.family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.")
    p.sample("vllm:kv_cache_usage_perc", lab, [0.4375, 0.5][poll])
    p.family("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.")
    p.sample("vllm:prefix_cache_queries_total", lab, [183040, 185088][poll])
    p.family("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.")
    p.sample("vllm:prefix_cache_hits_total", lab, [61440, 62464][poll])
    p.family("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.")
    p.sample("vllm:num_preemptions_total", lab, 0)
    p.family("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.")
    p.sample("vllm:prompt_tokens_total", lab, [183040, 189040][poll])
    p.family("vllm:prompt_tokens_cached_total", "counter", "Number of cached prompt tokens.")
    p.sample("vllm:prompt_tokens_cached_total", lab, [61440, 63440][poll])
    p.family("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.")
    p.sample("vllm:generation_tokens_total", lab, [52000, 53500][poll])
    p.family("vllm:request_success_total", "counter", "Count of successfully processed requests.")
    for reason, v in {"stop": [170, 176], "length": [9, 10], "abort": [1, 1], "error": [0, 1]}.items():
        p.sample("vllm:request_success_total", {"engine": "0", "finished_reason": reason, "model_name": LLAMA}, v[poll])
    # The first poll's totals; the second adds 8 requests (6 stop, 1
    # length, 1 error).
    hists = [
        ("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", V_TTFT,
         {4: 20, 5: 100, 7: 60}, {5: 6, 8: 2}, 11.52, 0.7),
        ("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", V_ITL,
         {1: 51000}, {1: 1480, 2: 12}, 1020.0, 30.0),
        ("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.",
         V_ITL, {1: 180}, {0: 2, 1: 6}, 3.6, 0.14),
        ("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", V_PHASE,
         {3: 100, 4: 80}, {3: 2, 4: 4, 6: 2}, 200.0, 11.0),
        ("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", V_PHASE,
         {0: 180}, {0: 8}, 3.6, 0.16),
        ("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", V_PHASE,
         {0: 180}, {0: 8}, 9.0, 0.5),
        ("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", V_PHASE,
         {2: 60, 3: 120}, {1: 2, 3: 4, 5: 2}, 170.0, 8.4),
        ("vllm:request_prompt_tokens", "Number of prefill tokens processed.", V_LEN,
         {8: 100, 9: 80}, {8: 4, 9: 4}, 183040.0, 6000.0),
        ("vllm:request_generation_tokens", "Number of generation tokens processed.", V_LEN,
         {6: 180}, {6: 8}, 13000.0, 600.0),
    ]
    for name, help, bounds, first, more, s1, ds in hists:
        counts = spread(bounds, first)
        total = s1
        if poll == 1:
            counts = add(counts, spread(bounds, more))
            total = s1 + ds
        p.histogram(name, help, lab, bounds, counts, total)
    p.family("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig")
    p.sample("vllm:cache_config_info", {"block_size": "16", "cache_dtype": "auto", "enable_prefix_caching": "True",
                                        "engine": "0", "gpu_memory_utilization": "0.9", "num_gpu_blocks": "27153"}, 1)
    return p


# SGLang's bounds (python/sglang/srt/metrics/collector.py).
S_TTFT = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
S_E2E = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400]
S_ITL = [0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100,
         0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000]
S_QUEUE = [0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400,
           500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000]


def sglang(poll, prefix):
    p = Page()
    n = lambda s: prefix + s
    lab = {"model_name": LLAMA}
    for name, help, ranks in [
        ("num_running_reqs", "The number of running requests.", [5, 4]),
        ("num_used_tokens", "The number of used tokens.", [40213, 35102]),
        ("token_usage", "The token usage.", [0.3, 0.2]),
        ("gen_throughput", "The generation throughput (token/s).", [410.5, 389.5]),
        ("num_queue_reqs", "The number of requests in the waiting queue.", [1, 0]),
        ("cache_hit_rate", "The prefix cache hit rate.", [0.61, 0.58]),
    ]:
        p.family(n(name), "gauge", help)
        for rank, v in enumerate(ranks):
            p.sample(n(name), {"dp_rank": str(rank), **lab}, v)
    for name, help, v in [
        ("prompt_tokens_total", "Number of prefill tokens processed.", [920000, 925000]),
        ("cached_tokens_total", "Number of cached prompt tokens.", [552000, 555000]),
        ("generation_tokens_total", "Number of generation tokens processed.", [210000, 212000]),
        ("num_requests_total", "Number of requests processed.", [1403, 1413]),
        ("num_aborted_requests_total", "Number of requests aborted.", [2, 2]),
    ]:
        p.family(n(name), "counter", help)
        p.sample(n(name), lab, v[poll])
    # The second poll adds 10 requests.
    hists = [
        ("time_to_first_token_seconds", "Histogram of time to first token in seconds.", S_TTFT,
         {0: 1200, 5: 200, 6: 3}, {0: 8, 1: 2}, 98.2, 0.9),
        ("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", S_ITL,
         {5: 200000}, {5: 1500, 6: 500}, 2600.0, 25.0),
        ("e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", S_E2E,
         {6: 1000, 7: 403}, {6: 6, 7: 4}, 3500.0, 24.0),
        ("queue_time_seconds", "Histogram of queueing time in seconds.", S_QUEUE,
         {0: 1300, 1: 103}, {0: 9, 1: 1}, 5.0, 0.05),
    ]
    for name, help, bounds, first, more, s1, ds in hists:
        counts = spread(bounds, first)
        total = s1
        if poll == 1:
            counts = add(counts, spread(bounds, more))
            total = s1 + ds
        p.histogram(n(name), help, lab, bounds, counts, total)
    return p


def llamacpp(poll):
    p = Page()
    for name, typ, help, v in [
        ("prompt_tokens_total", "counter", "Number of prompt tokens processed.", [18432, 20480]),
        ("prompt_seconds_total", "counter", "Prompt process time", [9.87, 10.97]),
        ("tokens_predicted_total", "counter", "Number of generation tokens processed.", [7340, 7740]),
        ("tokens_predicted_seconds_total", "counter", "Predict process time", [183.5, 193.5]),
        ("n_decode_total", "counter", "Total number of llama_decode() calls", [7412, 7612]),
        ("n_busy_slots_per_decode", "counter", "Average number of busy slots per llama_decode() call", [1.42, 1.5]),
        ("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.", [1867.3, 1861.8]),
        ("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.", [40, 40]),
        ("kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 means 100 percent usage.", [0.171, 0.18]),
        ("kv_cache_tokens", "gauge", "KV-cache tokens.", [2801, 2950]),
        ("requests_processing", "gauge", "Number of request processing.", [2, 2]),
        ("requests_deferred", "gauge", "Number of request deferred.", [1, 1]),
    ]:
        p.family("llamacpp:" + name, typ, help)
        p.sample("llamacpp:" + name, {}, v[poll])
    return p


for poll in (0, 1):
    vllm(poll).write(f"vllm-{poll + 1}.txt")
    sglang(poll, "sglang:").write(f"sglang-{poll + 1}.txt")
    sglang(poll, "sglang_").write(f"sglang_-{poll + 1}.txt")
    llamacpp(poll).write(f"llamacpp-{poll + 1}.txt")
