#!/usr/bin/env python3
"""A tiny OpenAI-compatible streaming server over a randomly initialised
causal LM on CUDA.

Used only by scripts/gpu-check (through scripts/gpu/plan.json and
scripts/gpu/plan-long.json), to give the bench-serve runner a real GPU
workload on a machine where nothing can be fetched: the model is a
transformers LlamaConfig built directly on the GPU with random weights, and
"tokenization" maps words to ids by a hash. The tokens are nonsense; the GPU
work and memory are real. It is not a model server.

Routes: GET /v1/models, GET /health, GET /info (the model's parameter
bytes), POST /v1/completions and POST /v1/chat/completions (stream or not;
with stream_options.include_usage a last chunk carries usage). Greedy
decoding with a KV cache; requests are served one at a time (a lock).

--dry-run (or GPU_CHECK_DRY_RUN=1) serves the same HTTP without torch, from
a CPU stand-in, so that scripts/gpu-check --dry-run can check its plumbing on
a machine without a GPU.
"""

import argparse
import json
import os
import sys
import threading
import time
import traceback
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 8 << 20  # bytes; a 16k-word prompt is about 100 KiB
MAX_TOKENS = 8192  # per request
DEFAULT_MAX_TOKENS = 16  # OpenAI's default for completions
BOS, EOS, FIRST_WORD_ID = 1, 2, 3

# What generated ids decode to: nonsense, but one word per token.
WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima "
    "mike november oscar papa quebec romeo sierra tango uniform victor whiskey "
    "xray yankee zulu red orange yellow green blue indigo violet black white "
    "grey north south east west up down left right in out on off one two three "
    "four five six seven eight nine ten"
).split()


def log(msg):
    print("gpu-check server: " + msg, flush=True)


def die(msg):
    print("gpu-check server: error: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


class RequestError(Exception):
    """A bad request: its message goes back as an OpenAI error body."""

    def __init__(self, status, message, kind="invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def tokenize(text, vocab):
    """BOS, then one id per whitespace-separated word (a hash of it)."""
    ids = [BOS]
    for w in text.split():
        ids.append(FIRST_WORD_ID + zlib.crc32(w.encode("utf-8", "replace")) % (vocab - FIRST_WORD_ID))
    return ids


def detokenize(tok):
    return " " + WORDS[tok % len(WORDS)]


class TorchEngine:
    """A random Llama on the first CUDA device, bf16, greedy with a KV cache."""

    def __init__(self, args):
        try:
            import torch
        except ImportError as e:
            die("PyTorch is not importable by %s (%s): this server runs on a machine whose Python has torch and transformers" % (sys.executable, e))
        if not torch.cuda.is_available():
            die("CUDA is not available to PyTorch %s (built for CUDA %s): this server runs only on an NVIDIA GPU; use --dry-run for the plumbing" % (torch.__version__, torch.version.cuda))
        try:
            import transformers
            from transformers import LlamaConfig, LlamaForCausalLM
        except ImportError as e:
            die("transformers is not importable by %s (%s)" % (sys.executable, e))
        self.torch = torch
        self.device = torch.device("cuda", 0)
        torch.cuda.set_device(self.device)
        heads = args.heads or max(1, args.hidden // 128)
        if args.hidden % heads:
            die("--hidden %d is not a multiple of --heads %d" % (args.hidden, heads))
        inter = args.intermediate or ((args.hidden * 8 // 3 + 255) // 256) * 256
        config = LlamaConfig(
            vocab_size=args.vocab,
            hidden_size=args.hidden,
            intermediate_size=inter,
            num_hidden_layers=args.layers,
            num_attention_heads=heads,
            num_key_value_heads=heads,
            max_position_embeddings=args.max_context,
            bos_token_id=BOS,
            eos_token_id=EOS,
            pad_token_id=0,
            tie_word_embeddings=False,
            use_cache=True,
        )
        torch.manual_seed(0)
        try:
            # torch >= 2.0: parameters are created on the GPU directly.
            with torch.device(self.device):
                model = LlamaForCausalLM(config)
        except Exception as e:  # an older torch: built on the CPU, then moved
            log("building on the GPU failed (%s: %s); building on the CPU, then moving" % (type(e).__name__, e))
            model = LlamaForCausalLM(config).to(self.device)
        model = model.to(dtype=torch.bfloat16)
        with torch.no_grad():
            # Whatever transformers' init did (or skipped), the weights are
            # finite and the same on every start.
            for p in model.parameters():
                if p.dim() >= 2:
                    p.normal_(0.0, 0.02)
        model.eval()
        self.model = model
        self.decoder = model.model  # LlamaModel: hidden states and the cache
        self.parameters = sum(p.numel() for p in model.parameters())
        self.parameter_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
        self.vocab = args.vocab
        self.max_context = args.max_context
        torch.cuda.empty_cache()
        # The first forward pays for cuBLAS and kernel set-up: before ready.
        # The decoder-and-head path skips the prompt's logits; should this
        # transformers not take it, the whole model's forward serves.
        self.whole = False
        try:
            self.warm_up()
        except Exception as e:
            log("the decoder-and-head forward failed (%s: %s); using the whole model's" % (type(e).__name__, e))
            self.whole = True
            self.warm_up()
        # One short generation, timed after the warm-up: the model's own
        # step time, for the log (a slow step is the model's, not the HTTP's).
        t0 = time.monotonic()
        for _ in self.generate(tokenize("time a few steps", self.vocab), 17, False):
            pass
        torch.cuda.synchronize()
        step_ms = (time.monotonic() - t0) * 1000 / 17
        self.info = {
            "engine": "torch",
            "step_ms": round(step_ms, 2),
            "model_class": type(model).__name__,
            "parameters": self.parameters,
            "parameter_bytes": self.parameter_bytes,
            "dtype": "bfloat16",
            "layers": args.layers,
            "hidden": args.hidden,
            "intermediate": inter,
            "heads": heads,
            "vocab": args.vocab,
            "max_context": args.max_context,
            "device": torch.cuda.get_device_name(self.device),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "transformers": transformers.__version__,
            "forward": "whole model" if self.whole else "decoder and head",
        }

    def memory(self):
        t = self.torch
        return {
            "cuda_memory_allocated": t.cuda.memory_allocated(self.device),
            "cuda_memory_reserved": t.cuda.memory_reserved(self.device),
            "cuda_max_memory_allocated": t.cuda.max_memory_allocated(self.device),
        }

    def warm_up(self):
        for _ in self.generate(tokenize("warm up the kernels " * 8, self.vocab), 4, False):
            pass
        self.torch.cuda.synchronize()

    def _forward(self, x, past):
        """One forward over x: the cache and the greedy next id (shape [1])."""
        with self.torch.inference_mode():
            kw = {"input_ids": x, "use_cache": True}
            if past is not None:
                kw["past_key_values"] = past
            if self.whole:
                out = self.model(**kw)
                return out.past_key_values, out.logits[:, -1, :].argmax(dim=-1)
            out = self.decoder(**kw)
            # Only the last position's logits: the whole prompt's would be
            # prompt x vocab values for nothing.
            return out.past_key_values, self.model.lm_head(out.last_hidden_state[:, -1, :]).argmax(dim=-1)

    def generate(self, ids, max_tokens, stop_at_eos):
        """Yields up to max_tokens generated ids, greedily."""
        t = self.torch
        past, nxt = self._forward(t.tensor([ids], dtype=t.long, device=self.device), None)
        for i in range(max_tokens):
            tok = int(nxt.item())
            yield tok
            if (stop_at_eos and tok == EOS) or i == max_tokens - 1:
                return
            past, nxt = self._forward(nxt.view(1, 1), past)


class DryEngine:
    """The CPU stand-in of --dry-run: the same ids from a formula, about
    1000 tokens a second, no torch and no GPU."""

    def __init__(self, args):
        self.vocab = args.vocab
        self.max_context = args.max_context
        self.parameter_bytes = 0
        self.info = {"engine": "dry-run (no torch, no GPU)", "parameters": 0, "parameter_bytes": 0,
                     "vocab": args.vocab, "max_context": args.max_context}

    def memory(self):
        return {}

    def generate(self, ids, max_tokens, stop_at_eos):
        tok = sum(ids) % self.vocab
        time.sleep(0.0002 * len(ids))  # a prefill of sorts
        for _ in range(max_tokens):
            tok = (tok * 31 + 7) % self.vocab
            if tok < FIRST_WORD_ID:
                tok += FIRST_WORD_ID
            time.sleep(0.001)
            yield tok


class State:
    engine = None
    model_name = "gpu-check-random"
    lock = threading.Lock()  # one generation at a time
    seq = 0
    seq_lock = threading.Lock()

    @classmethod
    def next_id(cls, prefix):
        with cls.seq_lock:
            cls.seq += 1
            return "%s-%d" % (prefix, cls.seq)


def int_field(body, names, default, lo, hi):
    for name in names:
        if name in body and body[name] is not None:
            v = body[name]
            if isinstance(v, bool) or not isinstance(v, int):
                raise RequestError(400, "%s must be an integer" % name)
            if not lo <= v <= hi:
                raise RequestError(400, "%s must be between %d and %d" % (name, lo, hi))
            return v
    return default


def prompt_text(body, chat):
    """The request's text (or its token ids, for a completions prompt given as ids)."""
    if chat:
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise RequestError(400, "messages must be a non-empty array")
        parts = []
        for m in msgs:
            if not isinstance(m, dict):
                raise RequestError(400, "each message must be an object")
            content = m.get("content")
            if isinstance(content, list):  # [{"type": "text", "text": ...}]
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
            if not isinstance(content, str):
                raise RequestError(400, "message content must be a string or an array of text parts")
            role = m.get("role") if isinstance(m.get("role"), str) else "user"
            parts.append(role[:32] + ": " + content)
        return "\n".join(parts)
    p = body.get("prompt")
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], str):
        p = p[0]
    if isinstance(p, list) and p and all(isinstance(t, int) and not isinstance(t, bool) for t in p):
        return p
    if not isinstance(p, str):
        raise RequestError(400, "prompt must be a string, one string in an array, or an array of token ids")
    return p


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: every response ends with the connection, so a stream needs
    # no chunked framing; Nagle off, so each token's chunk leaves at once.
    protocol_version = "HTTP/1.0"
    disable_nagle_algorithm = True
    server_version = "gpu-check-server/1"

    def log_message(self, fmt, *args):
        sys.stderr.write("gpu-check server: %s %s\n" % (self.address_string(), fmt % args))

    def send_json(self, status, obj):
        b = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def send_error_json(self, status, message, kind="invalid_request_error"):
        self.send_json(status, {"error": {"message": message, "type": kind}})

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path in ("/v1/models", "/models"):
            self.send_json(200, {"object": "list", "data": [
                {"id": State.model_name, "object": "model", "created": 0, "owned_by": "gpu-check"}]})
        elif path == "/health":
            self.send_json(200, {"status": "ok"})
        elif path == "/info":
            info = dict(State.engine.info, model=State.model_name, pid=os.getpid())
            info.update(State.engine.memory())
            self.send_json(200, info)
        else:
            self.send_error_json(404, "not found", "not_found_error")

    def do_POST(self):
        path = self.path.split("?", 1)[0]
        if path not in ("/v1/completions", "/v1/chat/completions"):
            self.send_error_json(404, "not found", "not_found_error")
            return
        self.streaming = False
        self.received = time.monotonic()
        try:
            body = self.read_body()
            self.generate(body, chat=path.endswith("/chat/completions"))
        except RequestError as e:
            self.send_error_json(e.status, e.message, e.kind)
        except (BrokenPipeError, ConnectionResetError):
            self.log_message("the client went away mid-response")
        except Exception as e:  # a CUDA error, out of memory: said, not hidden
            traceback.print_exc()
            msg = "generation failed: %s" % type(e).__name__
            try:
                if self.streaming:
                    self.event({"error": {"message": msg, "type": "server_error"}})
                else:
                    self.send_error_json(500, msg, "server_error")
            except OSError:
                pass

    def read_body(self):
        length = self.headers.get("Content-Length")
        if length is None:
            raise RequestError(411, "a Content-Length is required")
        try:
            n = int(length)
        except ValueError:
            raise RequestError(400, "Content-Length is not a number")
        if n < 0 or n > MAX_BODY:
            raise RequestError(413, "the body is over %d bytes" % MAX_BODY)
        try:
            body = json.loads(self.rfile.read(n))
        except (ValueError, UnicodeDecodeError):
            raise RequestError(400, "the body is not JSON")
        if not isinstance(body, dict):
            raise RequestError(400, "the body must be a JSON object")
        return body

    def generate(self, body, chat):
        eng = State.engine
        max_tokens = int_field(body, ("max_completion_tokens", "max_tokens") if chat else ("max_tokens",),
                               DEFAULT_MAX_TOKENS, 1, MAX_TOKENS)
        stream = body.get("stream") is True
        opts = body.get("stream_options")
        include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
        stop_at_eos = body.get("ignore_eos") is not True
        text = prompt_text(body, chat)
        ids = [BOS] + [t % eng.vocab for t in text] if isinstance(text, list) else tokenize(text, eng.vocab)
        if len(ids) + max_tokens > eng.max_context:
            raise RequestError(400, "the prompt (%d tokens) and max_tokens (%d) exceed the context of %d" % (len(ids), max_tokens, eng.max_context))
        rid = State.next_id("chatcmpl" if chat else "cmpl")
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(choice, usage=None):
            c = {"id": rid, "object": obj, "created": created, "model": State.model_name,
                 "choices": [choice] if choice is not None else []}
            if usage is not None:
                c["usage"] = usage
            return c

        def choice(content, finish=None):
            if chat:
                return {"index": 0, "delta": {"content": content} if content else {}, "logprobs": None, "finish_reason": finish}
            return {"index": 0, "text": content, "logprobs": None, "finish_reason": finish}

        with State.lock:
            if stream:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.streaming = True
                if chat:
                    self.event({"id": rid, "object": obj, "created": created, "model": State.model_name,
                                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}]})
            n, out, finish = 0, [], "length"
            first = last = None
            for tok in eng.generate(ids, max_tokens, stop_at_eos):
                n += 1
                if stop_at_eos and tok == EOS:
                    finish = "stop"
                    break
                word = detokenize(tok)
                if stream:
                    self.event(chunk(choice(word)))
                else:
                    out.append(word)
                last = time.monotonic()
                if first is None:
                    first = last
        self.log_timing(rid, len(ids), n, first, last)
        usage = {"prompt_tokens": len(ids), "completion_tokens": n, "total_tokens": len(ids) + n}
        if not stream:
            full = "".join(out)
            c = ({"index": 0, "message": {"role": "assistant", "content": full}, "logprobs": None, "finish_reason": finish}
                 if chat else {"index": 0, "text": full, "logprobs": None, "finish_reason": finish})
            self.send_json(200, {"id": rid, "object": "chat.completion" if chat else "text_completion",
                                 "created": created, "model": State.model_name, "choices": [c], "usage": usage})
            return
        self.event(chunk(choice("", finish)))
        if include_usage:
            self.event(chunk(None, usage))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def log_timing(self, rid, prompt, n, first, last):
        """The server's own view of one request, for scripts/gpu-check to
        set beside the runner's: the time from the request's arrival to the
        first token's write, and the decode rate between the first and the
        last token's writes, measured as the runner measures it."""
        if first is None:
            return
        rate = (n - 1) / (last - first) if n > 1 and last > first else 0.0
        log("timing %s prompt_tokens=%d completion_tokens=%d first_token_ms=%.2f decode_tok_s=%.2f" % (
            rid, prompt, n, (first - self.received) * 1000, rate))

    def event(self, obj):
        self.wfile.write(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")
        self.wfile.flush()


def main():
    ap = argparse.ArgumentParser(description="scripts/gpu-check's OpenAI-compatible server over a random Llama on CUDA")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=0, help="attention heads (default hidden/128)")
    ap.add_argument("--intermediate", type=int, default=0, help="MLP width (default about 8/3 hidden)")
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--max-context", type=int, default=32768)
    ap.add_argument("--model", default="gpu-check-random", help="the name /v1/models lists")
    ap.add_argument("--dry-run", action="store_true", default=os.environ.get("GPU_CHECK_DRY_RUN") == "1",
                    help="no torch, no GPU: a CPU stand-in (also GPU_CHECK_DRY_RUN=1)")
    args = ap.parse_args()
    if not 0 < args.port < 65536:
        die("--port must be 1..65535")
    if not 1 <= args.layers <= 128 or not 64 <= args.hidden <= 16384 or args.hidden % 64:
        die("--layers must be 1..128 and --hidden a multiple of 64 in 64..16384")
    if not 256 <= args.vocab <= 1 << 20 or not 64 <= args.max_context <= 1 << 20:
        die("--vocab must be 256..1048576 and --max-context 64..1048576")
    State.model_name = args.model
    # SIGTERM keeps its default action: the runner's stop ends the process
    # at once, and the driver frees its GPU memory with it.
    start = time.monotonic()
    State.engine = DryEngine(args) if args.dry_run else TorchEngine(args)
    info = State.engine.info
    log("%s model=%s parameters=%d parameter_bytes=%d pid=%d device=%s built in %.1f s" % (
        info["engine"], args.model, info["parameters"], info["parameter_bytes"], os.getpid(),
        info.get("device", "none"), time.monotonic() - start))
    if not args.dry_run:
        log("torch=%s cuda=%s transformers=%s forward=%s step=%.2f ms %s" % (
            info["torch"], info["cuda"], info["transformers"], info["forward"], info["step_ms"],
            json.dumps(State.engine.memory())))
    srv = ThreadingHTTPServer((args.host, args.port), Handler)
    srv.daemon_threads = True
    log("listening on http://%s:%d/v1" % (args.host, args.port))
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
