"""Runs under ctest: the bindings return the CLI's fields and raise SappError on bad input."""
import sys

sys.path.insert(0, sys.argv[1])  # the build folder holding sapp/ with the compiled _sapp module
import sapp  # noqa: E402

est = sapp.estimate("llama3-8b", "h100-sxm", 8, 8, 4096, tp=2, sp=True)
assert est["params"]["total"] > 8.0e9, est["params"]
assert est["fits"] is True
assert est["step_time_s"] > 0 and 0 < est["mfu"] < 1
assert len(est["stages"]) == 1

res = sapp.search("llama3-8b", "h100-sxm", 8, 16, 4096, top=3)
assert len(res["candidates"]) == 3
times = [c["step_time_s"] for c in res["candidates"]]
assert times == sorted(times), times

narrow = sapp.search("llama3-8b", "h100-sxm", 8, 16, 4096, top=50, tp="2", pp="1,2", recompute="off", fp8=True)
assert narrow["candidates"], narrow["rejected"]
for c in narrow["candidates"]:
    assert c["layout"]["tp"] == 2 and c["layout"]["pp"] in (1, 2) and c["layout"]["recompute"] == "off", c["layout"]

try:
    sapp.search("llama3-8b", "a100-80g", 8, 16, 4096, fp8=True)
except sapp.SappError as e:
    assert "peak_flops_fp8" in str(e), str(e)
else:
    raise AssertionError("an FP8 search on a device without an FP8 rate was accepted")

try:
    sapp.estimate("llama3-8b", "h100-sxm", 8, 8, 4096, tp=0)
except sapp.SappError as e:
    assert "tp" in str(e) and "below the minimum of 1" in str(e), str(e)
else:
    raise AssertionError("a zero TP degree was accepted")

bal = sapp.balance(sys.argv[2], 4, 8, 0.0, 1)
assert bal["feasible"] and bal["proved_optimal"]
assert len(bal["offset"][0]) == 4

try:
    sapp.estimate("llama3-8b", "h100-sxm", 6, 8, 4096, tp=3)
except sapp.SappError as e:
    assert "tp/heads" in str(e) or "global_batch" in str(e), str(e)
else:
    raise AssertionError("a bad layout was accepted")
print("python bindings ok")
