#!/usr/bin/env python3
"""Where a lease storm's time goes, hop by hop, from the API server's audit log.

Run a storm with every client's requests audited and the work directory kept:

    bench-scale --ours-only --sizes "" --multi "" --junk 0 --default-limits-size 0 \
      --storm-leases 30 --storm-clients 3 --storm-warm 3 --storm-max 6 --repeats 1 \
      --keep --audit-all

then:  hack/scalebench/storm-hops.py <work dir>/audit.log storm-1 [controller user]

For each Exporter the controller created in the namespace it prints the time of each hop
after the previous one (p50/p95/p99 over the instances): the create, the simulated core's
credential, ours labelling it, the config Secret, the Pod, the simulated kubelet's binding
and Pod status, the core's Online; and for each Exporter the controller deleted: its Pod's
last status write (the exporter exited) -> the controller's next Exporter create (its
replacement) and -> its delete. Times are the API server's (stageTimestamp of
ResponseComplete).
"""
import json
import sys
from datetime import datetime

CRED_SUFFIX = "-token"
CONFIG_SUFFIX = "-config"


def ts(s):
    return datetime.strptime(s[:26].rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def main():
    path, ns = sys.argv[1], sys.argv[2]
    ctl = sys.argv[3] if len(sys.argv) > 3 else "exporterset-controller"
    ev = []
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            o = e.get("objectRef") or {}
            if o.get("namespace") != ns or e.get("stage") != "ResponseComplete":
                continue
            code = (e.get("responseStatus") or {}).get("code", 0)
            ev.append((ts(e["stageTimestamp"]), e["user"]["username"], e["verb"], o.get("resource"), o.get("subresource", ""), o.get("name", ""), code))
    ev.sort()
    created = {}
    for t, user, verb, res, sub, name, code in ev:
        if user == ctl and verb == "create" and res == "exporters" and code < 300:
            created.setdefault(name, t)

    def first(after, pred):
        for e in ev:
            if e[0] >= after and pred(*e):
                return e[0]
        return None

    hops = ["credential", "label", "config", "pod", "binding", "pod status", "online"]
    d = {h: [] for h in hops}
    total = []
    for name, t0 in created.items():
        steps = [
            lambda t, u, v, r, s, n, c: u != ctl and r == "exporters" and s == "status" and n == name,
            lambda t, u, v, r, s, n, c: u == ctl and v == "patch" and r == "secrets" and n == name + CRED_SUFFIX,
            lambda t, u, v, r, s, n, c: u == ctl and v == "create" and r == "secrets" and n == name + CONFIG_SUFFIX,
            lambda t, u, v, r, s, n, c: u == ctl and v == "create" and r == "pods" and s == "" and n == name,
            lambda t, u, v, r, s, n, c: u != ctl and r == "pods" and s == "binding" and n == name,
            lambda t, u, v, r, s, n, c: u != ctl and r == "pods" and s == "status" and n == name,
            lambda t, u, v, r, s, n, c: u != ctl and r == "exporters" and s == "status" and n == name,
        ]
        t = t0
        ok = True
        for h, pred in zip(hops, steps):
            nt = first(t, pred)
            if nt is None:
                ok = False
                break
            d[h].append(nt - t)
            t = nt
        if ok:
            total.append(t - t0)
    print(f"{len(created)} Exporters created by {ctl} in {ns}")
    print(f"{'hop':<34}{'n':>4}{'p50 s':>8}{'p95 s':>8}{'p99 s':>8}")
    for h in hops:
        xs = d[h]
        print(f"{'-> ' + h:<34}{len(xs):>4}{pct(xs, 50):>8.3f}{pct(xs, 95):>8.3f}{pct(xs, 99):>8.3f}")
    print(f"{'create -> online':<34}{len(total):>4}{pct(total, 50):>8.3f}{pct(total, 95):>8.3f}{pct(total, 99):>8.3f}")

    # Removals: the exporter's exit (its Pod's last status write before the delete) -> the
    # controller's next Exporter create, and -> the delete.
    to_create, to_delete, lists = [], [], 0
    for t, user, verb, res, sub, name, code in ev:
        if user == ctl and verb == "list" and res == "leases":
            lists += 1
        if not (user == ctl and verb == "delete" and res == "exporters" and code < 300):
            continue
        exits = [e[0] for e in ev if e[0] <= t and e[3] == "pods" and e[4] == "status" and e[5] == name and e[1] != ctl]
        if not exits:
            continue
        tx = exits[-1]
        to_delete.append(t - tx)
        nc = first(tx, lambda t2, u, v, r, s, n, c: u == ctl and v == "create" and r == "exporters" and c < 300)
        if nc is not None:
            to_create.append(nc - tx)
    print(f"{'exit -> delete':<34}{len(to_delete):>4}{pct(to_delete, 50):>8.3f}{pct(to_delete, 95):>8.3f}{pct(to_delete, 99):>8.3f}")
    print(f"{'exit -> next create (replacement)':<34}{len(to_create):>4}{pct(to_create, 50):>8.3f}{pct(to_create, 95):>8.3f}{pct(to_create, 99):>8.3f}")
    print(f"uncached Lease lists by {ctl}: {lists}")


if __name__ == "__main__":
    main()
