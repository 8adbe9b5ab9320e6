"""Runs under ctest: the bindings take the command line's options and return exactly its JSON; bad input raises
SappError. Arguments: the build's python folder, a layers JSON, the sapp binary."""
import json
import subprocess
import sys
import tempfile

sys.path.insert(0, sys.argv[1])  # the build folder holding sapp/ with the compiled _sapp module
import sapp  # noqa: E402

LAYERS, SAPP = sys.argv[2], sys.argv[3]


def cli_json(*args):
    done = subprocess.run([SAPP, *args, "--format", "json"], capture_output=True, text=True, check=False)
    assert done.returncode in (0, 3), done.stderr
    return json.loads(done.stdout)


def without_timing(report):
    return {k: v for k, v in report.items() if k not in ("search_seconds", "threads")}


# The same request from the command line and from Python gives the same report, key for key.
est = sapp.estimate("llama3-8b", "h100-sxm", 8, 8, 4096, tp=2, sp=True, recompute="selective", zero=2)
assert est == cli_json("estimate", "-m", "llama3-8b", "-d", "8", "-b", "8", "-s", "4096", "--tp", "2", "--sp", "--recompute", "selective", "--zero", "2")
assert est["params"]["total"] > 8.0e9, est["params"]
assert est["fits"] is True and est["layout"]["tp"] == 2 and est["layout"]["zero"] == 2
assert est["step_time_s"] > 0 and 0 < est["mfu"] < 1

found = sapp.search("mixtral-8x7b", "h100-sxm", 64, 128, 4096, top=5, etp="1", cp_algo="ring", optimizer_shard=0, threads=1)
assert without_timing(found) == without_timing(
    cli_json("search", "-m", "mixtral-8x7b", "-d", "64", "-b", "128", "-s", "4096", "--top", "5", "--etp", "1", "--cp-algo", "ring", "-j", "1"))
times = [c["step_time_s"] for c in found["candidates"]]
assert len(times) == 5 and times == sorted(times), times

# Every command-line option of estimate and search is a keyword here: the tables are the same.
keys = {key for key, _, _ in sapp.fields("search")}
assert {"tp", "etp", "sp", "cp_algo", "optimizer_shard", "threads", "unfold", "allow_tp_across_nodes", "overlap_ep"} <= keys, keys

narrow = sapp.search("llama3-8b", "h100-sxm", 8, 16, 4096, top=50, tp="2", pp=[1, 2], recompute="off", fp8=True, unfold=True)
assert narrow["candidates"], narrow["rejected"]
for c in narrow["candidates"]:
    assert c["layout"]["tp"] == 2 and c["layout"]["pp"] in (1, 2) and c["layout"]["recompute"] == "off", c["layout"]


# A training config to start from, as --from: the same report as the command line's, the reader's notes raised as
# warnings, the other options overriding the file.
import os  # noqa: E402
import warnings  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(LAYERS)), "..", "..", "examples", "megatron", "llama3-70b-h100x64.sh")
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    from_file = sapp.estimate(from_config=SCRIPT)
assert from_file == cli_json("estimate", "--from", SCRIPT), from_file
assert any("read as megatron" in str(w.message) for w in said), [str(w.message) for w in said]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert sapp.estimate(from_config=SCRIPT, tp=4, pp=8)["layout"]["pp"] == 8
# Megatron-Bridge's run_config.yaml states no device count: given as an option, the same report as the CLI's.
BRIDGE = os.path.join(os.path.dirname(SCRIPT), "..", "megatron-bridge", "llama3-8b-run_config.yaml")
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    from_bridge = sapp.estimate(from_config=BRIDGE, devices=8)
assert from_bridge == cli_json("estimate", "--from", BRIDGE, "--devices", "8"), from_bridge
assert any("Megatron-Bridge ConfigContainer YAML" in str(w.message) for w in said), [str(w.message) for w in said]
# NeMo 1.x's GPT YAML states its world (trainer.devices x num_nodes): the same report as the CLI's.
NEMO = os.path.join(os.path.dirname(SCRIPT), "..", "nemo", "llama3-70b-h100x128.yaml")
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    from_nemo = sapp.estimate(from_config=NEMO)
assert from_nemo == cli_json("estimate", "--from", NEMO), from_nemo
assert from_nemo["layout"]["vpp"] == 10, from_nemo["layout"]
assert any("NeMo 1.x GPT YAML" in str(w.message) for w in said), [str(w.message) for w in said]


def refused(call, *words):
    try:
        call()
    except sapp.SappError as e:
        for w in words:
            assert w in str(e), (w, str(e))
    else:
        raise AssertionError(f"accepted: {words}")


refused(lambda: sapp.search("llama3-8b", "a100-80g", 8, 16, 4096, fp8=True), "peak_flops_fp8")
refused(lambda: sapp.estimate(from_config="/nonexistent/run.sh"), "/nonexistent/run.sh")
refused(lambda: sapp.estimate("llama3-8b", "h100-sxm", 8, 8, 4096, fp4=True), "peak_flops_fp4")
# NVFP4 on Blackwell Ultra: faster than FP8 on the same layout, and said to be unvalidated there.
fp4 = sapp.estimate("llama3-8b", "b300", 8, 8, 4096, fp4=True)
assert fp4["step_time_s"] < sapp.estimate("llama3-8b", "b300", 8, 8, 4096, fp8=True)["step_time_s"]
assert fp4["validated"] is False and "NVFP4" in fp4["validation"], fp4["validation"]
assert fp4["precision"] == "NVFP4" and est["precision"] == "BF16", (fp4["precision"], est["precision"])
refused(lambda: sapp.estimate("llama3-8b", "h100-sxm", 8, 8, 4096, tp=0), "tp", "below the minimum of 1")
refused(lambda: sapp.search("llama3-8b", "h100-sxm", 0, 8, 4096), "devices", "below the minimum of 1")
refused(lambda: sapp.search("llama3-8b", "h100-sxm", 4294967296, 8, 4096), "devices", "above the limit")
refused(lambda: sapp.estimate("llama3-8b", "h100-sxm", 8, 8, 4096, tpp=2), "tpp", "unknown option")
refused(lambda: sapp.estimate("llama3-8b", "h100-sxm", 6, 8, 4096, tp=3), "tp/heads")
refused(lambda: sapp.estimate("llama3-8b", "h100-sxm", 8, 12, 4096), "global_batch", "12")
refused(lambda: sapp.estimate("llama3-8b", "h100-sxm", None, 8, 4096), "devices is required")
# A value of a hundred kilobytes is quoted cut, as the CLI prints it (sapp::Error keeps 2000 characters).
with tempfile.TemporaryDirectory() as tmp:
    huge = os.path.join(tmp, "huge.sh")
    with open(huge, "w") as f:
        f.write("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 64 --num-attention-heads 4 "
                "--vocab-size 100 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout \"(" + "t" * 100000 + "\"\n")
    try:
        sapp.estimate(from_config=huge)
    except sapp.SappError as e:
        assert "characters in all" in str(e) and len(str(e)) < 2200, len(str(e))
    else:
        raise AssertionError("accepted a 100 kB layout")

# balance: the same report as `sapp balance --format json` (solve_seconds aside, a wall time).
bal = sapp.balance(LAYERS, 4, 8, interleave=2)
cli_bal = cli_json("balance", "--layers", LAYERS, "--stages", "4", "--micro-batches", "8", "--interleave", "2")
for report in (bal, cli_bal):
    del report["solver"]["solve_seconds"]
assert bal == cli_bal, (bal, cli_bal)
assert bal["result"]["fits"] and bal["result"]["simulated_step_time"] > 0, bal
assert len(bal["strategy"][0]["offset"]) == 2 and len(bal["strategy"][0]["offset"][0]) == 4, bal["strategy"]
refused(lambda: sapp.balance(LAYERS, 4294967296, 8), "stages", "above the limit")
refused(lambda: sapp.balance(LAYERS, 4, 8, interleave="three"), "interleave")
assert {key for key, _, _ in sapp.fields("balance")} >= {"layers", "stages", "micro_batches", "memory_limit", "interleave", "naive",
                                                      "recompute_num_layers"}
# Megatron's block recompute needs the full kind, which the demo's layers do not state; a negative count is refused.
refused(lambda: sapp.balance(LAYERS, 4, 8, recompute_num_layers="auto"), "recompute_num_layers", "full")
refused(lambda: sapp.balance(LAYERS, 4, 8, recompute_num_layers=-1), "recompute_num_layers", "below the minimum")
print("python bindings ok")
