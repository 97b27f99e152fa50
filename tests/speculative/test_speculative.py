"""tests/speculative/test_speculative.py - speculative decoding on the real
models (issue 8, acceptance point 1): Gemma 3 270M and SmolLM2-135M at BF16
(the numpy export of their GGUF files, scripts/export-safetensors-numpy) as
targets, each with its own quantization as the DRAFT of a stored model
(`wick create --quantize-draft`: int4 for SmolLM2, int8 for Gemma 3, whose
int4 search quantizer takes ~45 s on 2 cores). For 4 prompts (SmolLM2) and 3
(Gemma 3), 128 greedy tokens each (the suite's time: on a CPU without
AVX-512 BF16 steps are slow, and 10 prompts x 256 tokens took ~10 min there;
on a 2-core Zen 1 a SmolLM2 run with the draft takes ~12 s, one without ~4 s)
with the draft equal those without it (`--draft-max 0`), token for token
(the printed text and the logprob lines, which name every token), and the
draft was really used (its counts in --verbose).
The exports are cached in ~/.cache/wick/export-np/<model> (tests/exports.py)."""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, finish  # noqa: E402
from exports import export  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WICK = os.path.join(ROOT, "build", "wick")
STORE = tempfile.mkdtemp(prefix="wick-spec-store-")
atexit.register(shutil.rmtree, STORE, True)
ENV = dict(os.environ, WICK_MODELS=STORE)

PROMPTS = [
    "The history of the Roman Empire",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Ten tips for growing tomatoes at home:\n1.",
    "Once upon a time, in a small village by the sea, there lived",
    "The main differences between TCP and UDP are",
    "Photosynthesis is the process by which",
    "La tour Eiffel a été construite",
    "Q: What is the capital of Australia?\nA:",
    "SELECT name, COUNT(*) FROM orders",
    "The three laws of thermodynamics state that",
]


def run(name, prompt, draft_max, raw, n_predict):
    args = [WICK, "run", name, "--temperature", "0", "--num-predict", str(n_predict), "--draft-max", str(draft_max),
            "--draft-min", str(min(draft_max, 3)),  # speculate every step: the equality is tested, not skipped
            "--logprobs", "0", "--verbose", "--threads", "2"]
    if raw:
        args.append("--raw")
    p = subprocess.run(args + ["--", prompt], capture_output=True, env=ENV, timeout=600)
    err = p.stderr.decode("utf-8", "replace")
    lps = [line for line in err.splitlines() if line.startswith("logprobs: ")]  # one line per token
    counts = {k: int(v) for k, v in re.findall(r"^(draft count|draft accepted):\s+(\d+)", err, re.M)}
    rate = re.search(r"^eval rate:\s+([\d.]+)", err, re.M)
    return p.returncode, p.stdout, lps, counts, float(rate.group(1)) if rate else 0.0, err


def test_model(model, raw, prompts, n_predict, draft_type):
    folder = export(model)
    # DRAFT must not be FROM's own path (Ollama's rule): a folder of links to the same files
    draft = os.path.join(STORE, f"draft-{model}")
    os.makedirs(draft)
    for f in os.listdir(folder):
        os.symlink(os.path.join(folder, f), os.path.join(draft, f))
    mf = os.path.join(STORE, f"Modelfile.{model}")
    with open(mf, "w") as f:
        f.write(f"FROM {folder}\nDRAFT {draft}\n")
    name = f"{model}-spec"
    p = subprocess.run([WICK, "create", name, "-f", mf, "--quantize-draft", draft_type], capture_output=True, env=ENV)
    check(p.returncode == 0, f"{model}: create with an {draft_type} self-draft", p.stderr.decode())
    drafted = accepted = 0
    rates = [[], []]
    for i, prompt in enumerate(prompts):
        rc0, out0, lp0, _, r0, err0 = run(name, prompt, 0, raw, n_predict)
        rc1, out1, lp1, c1, r1, err1 = run(name, prompt, 8, raw, n_predict)
        check(rc0 == 0 and rc1 == 0, f"{model} prompt {i}: both runs succeed", err0[-500:] + err1[-500:])
        check(len(lp0) >= 1 and lp0 == lp1 and out0 == out1,
              f"{model} prompt {i}: {len(lp0)} greedy tokens with the draft equal those without it",
              f"first difference at token {next((j for j, (a, b) in enumerate(zip(lp0, lp1)) if a != b), min(len(lp0), len(lp1)))}")
        drafted += c1.get("draft count", 0)
        accepted += c1.get("draft accepted", 0)
        rates[0].append(r0)
        rates[1].append(r1)
    check(drafted > 0 and 0 < accepted <= drafted, f"{model}: the draft was used ({accepted} of {drafted} accepted)")
    print(f"{model}: {drafted} drafted, {accepted} accepted; eval rate without/with the draft "
          f"{sum(rates[0]) / len(rates[0]):.1f} / {sum(rates[1]) / len(rates[1]):.1f} tokens/s (informative)")


test_model("gemma3", raw=True, prompts=PROMPTS[:3], n_predict=128, draft_type="int8")  # the base model continues text
test_model("smollm2", raw=False, prompts=PROMPTS[3:7], n_predict=128, draft_type="int4")  # the instruct model answers in its chat format
finish("speculative")
