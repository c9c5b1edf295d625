"""A runner stand-in that reports what the container's network reaches (tests/container).

Run as the exec's runner: reads the RunRequest, whose prompt is a JSON object
{"tcp": [[host, port], ...], "dns": [name, ...]}, starts the runner's loopback forwarder to the
proxy socket (runners/_forward.py, as every real runner does), and reports (as a progress event
of JSON, then as a final's structured output), for each target, "open" or the error; for the
proxy, the HTTP status of a request with the run token and one with a wrong token; and the
container's routes. A DNS
lookup is tried only when the container has no route at all, so a broken isolation cannot send
the query anywhere.
"""

import asyncio
import json
import os
import socket
import sys
import urllib.error
import urllib.request

from runners import _forward


def tcp(host, port):
    try:
        with socket.create_connection((host, port), timeout=2):
            return "open"
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"


def routes():
    found = []
    for path in ("/proc/net/route", "/proc/net/ipv6_route"):
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        # /proc/net/route names the interface first (after a header), ipv6_route last.
        ipv4 = path.endswith("/route")
        for line in lines[1:] if ipv4 else lines:
            fields = line.split()
            if fields and (fields[0] if ipv4 else fields[-1]) != "lo":
                found.append(line)
    return found


def http_status(url, token, body):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "x-api-key": token,
            "content-type": "application/json",
            "anthropic-version": "2023-06-01",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"


async def probe(plan):
    result = {"tcp": {}, "dns": {}, "routes": routes()}
    async with _forward.forwarding() as url:
        loop = asyncio.get_running_loop()
        for host, port in plan.get("tcp", []):
            result["tcp"][f"{host}:{port}"] = await loop.run_in_executor(None, tcp, host, port)
        for name in plan.get("dns", []):
            if result["routes"]:
                result["dns"][name] = "not tried: the container has a route"
                continue
            try:
                found = await loop.run_in_executor(None, socket.getaddrinfo, name, 443)
                result["dns"][name] = f"resolved: {found[:1]}"
            except OSError as exc:
                result["dns"][name] = f"{type(exc).__name__}: {exc}"
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        token = os.environ.get("ANTHROPIC_API_KEY", "")
        messages = f"{url}/v1/messages"
        result["proxy"] = {
            "url": url,
            "with_token": await loop.run_in_executor(None, http_status, messages, token, body),
            "wrong_token": await loop.run_in_executor(
                None, http_status, messages, "tribunal-run-wrong", body
            ),
        }
    return result


def main():
    request = json.loads(sys.stdin.readline())
    result = asyncio.run(probe(json.loads(request["prompt"])))
    # The findings go out as progress too: the proxy refuses the final (it is not the model's
    # answer, container/proxy/finals.py), the progress still reaches the test.
    sys.stdout.write(json.dumps({"kind": "progress", "text": json.dumps(result)}) + "\n")
    sys.stdout.write(json.dumps({"kind": "final", "text": "probed", "structured": result}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
