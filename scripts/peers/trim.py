# Trims the per-request arrays of a tool's result file, in place, so it can
# be committed as a fixture: GuideLLM's benchmarks[].requests keep their
# first 2 of each status; vLLM's generated_texts become empty strings (the
# arrays keep their lengths, which the importer counts). Summaries are
# untouched.
import json, sys

path, tool = sys.argv[1], sys.argv[2]
text = open(path).read()
if tool == "guidellm":
    d = json.loads(text)
    for b in d.get("benchmarks", []):
        reqs = b.get("requests") or {}
        for status in list(reqs):
            if isinstance(reqs[status], list):
                reqs[status] = reqs[status][:2]
    out = json.dumps(d) + "\n"
elif tool == "vllm":
    lines = []
    for line in text.splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        if isinstance(d.get("generated_texts"), list):
            d["generated_texts"] = ["" for _ in d["generated_texts"]]
        lines.append(json.dumps(d))
    out = "\n".join(lines) + "\n"
else:
    sys.exit(f"trim: unknown tool {tool}")
open(path, "w").write(out)
