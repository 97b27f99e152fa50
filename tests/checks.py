"""tests/checks.py - the check harness the Python test scripts of
tests/cli, tests/server and tests/store share: each check counts, a failed one prints
what and why, and finish() reports and sets the exit status."""
import sys

failures = 0
checks = 0


def check(cond, what, detail=""):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL {what}\n  {detail}", flush=True)


def error_body(call, exc):
    """What a client call that must fail gives: the body of the exc (a client's
    error class) it raises, or "accepted" when it returns."""
    try:
        call()
        return "accepted"
    except exc as e:
        return e.body


def finish(suite):
    print(f"{suite}: {checks - failures}/{checks} checks passed")
    sys.exit(1 if failures else 0)
