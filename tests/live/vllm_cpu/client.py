"""Requests of a shared-prefix workload, through kvtui's proxy (by hand: run.sh).

    client.py URL N            N requests to URL (the proxy): completions and chats, streamed and not
    client.py URL N --direct   N requests straight to two engines, URL's port and the next
                               (sent before kvtui joins, so its replay must fill them)
"""
import json
import random
import sys
import urllib.request


def post(url: str, body: dict) -> bytes:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.read()


def direct(url: str, n: int) -> None:
    base, _, port = url.rpartition(":")
    for k in range(n):
        prompt = " ".join(f"w{(k * 37 + j) % 1000 + 3}" for j in range(70))
        post(f"{base}:{int(port) + k % 2}/v1/completions", {"model": "tiny", "prompt": prompt, "max_tokens": 2})
    print(f"{n} sent straight to the engines")


def through(url: str, n: int) -> None:
    rng = random.Random(5)
    families = [[f"w{rng.randrange(3, 1020)}" for _ in range(rng.randrange(60, 200))] for _ in range(6)]
    ok = 0
    for k in range(n):
        words = rng.choice(families) + [f"w{rng.randrange(3, 1020)}" for _ in range(rng.randrange(1, 40))]
        chat = k % 7 == 3
        body = {"model": "tiny", "max_tokens": 4, "stream": k % 3 == 0}
        body.update({"messages": [{"role": "user", "content": " ".join(words)}]} if chat else {"prompt": " ".join(words)})
        if body["stream"]:
            body["stream_options"] = {"include_usage": True}
        data = post(url + ("/v1/chat/completions" if chat else "/v1/completions"), body)
        ok += data.rstrip().endswith(b"[DONE]") if body["stream"] else "choices" in json.loads(data)
    print(f"{ok}/{n} answered whole")


if __name__ == "__main__":
    (direct if "--direct" in sys.argv else through)(sys.argv[1], int(sys.argv[2]))
