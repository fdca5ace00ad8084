"""The loop every gemmforge compile worker runs (python/gemmforge_triton, python/gemmforge_cute): one
JSON request per line, one reply per line repeating the request's "id", on the channel the parent
opened (GEMMFORGE_WORKER_FDS: the request and reply fds; stdin and stdout when run by hand). What
anything prints goes to stderr, never into a reply.
"""
import ctypes
import json
import os
import signal
import sys
import traceback


def channel():
    fds = os.environ.get("GEMMFORGE_WORKER_FDS")
    if not fds:
        return sys.stdin, sys.stdout
    request_fd, reply_fd = (int(f) for f in fds.split(","))
    return os.fdopen(request_fd, "r"), os.fdopen(reply_fd, "w")


def die_with_parent():
    """When gemmforge started this worker, the parent's death arrives as SIGTERM and takes the
    worker's process group (ptxas, the linker) with it."""
    if not os.environ.get("GEMMFORGE_WORKER_FDS"):
        return
    signal.signal(signal.SIGTERM, lambda *_: os.killpg(0, signal.SIGKILL))
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def serve(handlers):
    """Answers requests until "quit" or the end of input; handlers maps an op to a function of the
    request returning the reply. A handler that raises is a failed request, not a dead worker."""
    die_with_parent()
    requests, replies = channel()
    for line in requests:
        req = {}
        try:
            req = json.loads(line)
            if req["op"] == "quit":
                break
            handler = handlers.get(req["op"])
            reply = handler(req) if handler else {"ok": False, "error": f"unknown op {req['op']}"}
        except Exception as e:
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]}
        reply["id"] = req.get("id")
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
