"""command-cloud.py: a site's cloud behind a `type: command` account (the
contract of src/providers/command/command.h, docs/clouds.md), for tests and
demos, and a starting point for a site's own wrapper.

usage: command-cloud.py [--boot NETNS_HOSTS_SH HOSTS_DIR] DIR OP   (stdin: the request)
(as an account's `command`: the provider appends OP)

DIR holds state.json (instances, tokens) and calls.log (a line per call).
With --boot, each instance is a real host: `NETNS_HOSTS_SH add HOSTS_DIR ID`
boots a network namespace with sshd (scripts/netns-hosts.sh) and its address
is the instance's; release runs `del`.  Without it instances are records
with made-up addresses.  Files in DIR steer it (fault injection for tests):
`refuse` (a JSON error object: acquire answers it and exits 1), `hang`
(acquire sleeps 30 s first), `preempt` (site ids describe reports preempted,
reason Server.SpotInstanceTermination)."""
import json
import os
import subprocess
import sys
import time

args = sys.argv[1:]
boot = None
if args[:1] == ["--boot"]:
    boot, args = args[1:3], args[3:]
d, op = args[0], args[1]
req = json.load(sys.stdin)
path = os.path.join(d, "state.json")
st = json.load(open(path)) if os.path.exists(path) else {"next": 1, "inst": {}, "tokens": {}}
with open(os.path.join(d, "calls.log"), "a") as f:
    f.write(op + " " + json.dumps(req) + "\n")


def save():
    with open(path + ".tmp", "w") as f:
        json.dump(st, f)
    os.replace(path + ".tmp", path)


def flag(name):
    p = os.path.join(d, name)
    return open(p).read() if os.path.exists(p) else None


if op == "acquire":
    if flag("hang") is not None:
        open(os.path.join(d, "hanging"), "w").close()
        time.sleep(30)
    refuse = flag("refuse")
    if refuse:
        print(json.dumps({"error": json.loads(refuse)}))
        sys.exit(1)
    t = req["token"]
    if t not in st["tokens"]:
        ids = []
        for sid in req["ids"]:
            iid = "site-%d" % st["next"]
            st["next"] += 1
            addr = "10.9.0.%d" % st["next"]
            if boot:
                addr = subprocess.run(["sh", boot[0], "add", boot[1], iid], check=True,
                                      stdout=subprocess.PIPE, text=True).stdout.strip()
            st["inst"][iid] = {"id": iid, "state": "booting", "spillway_id": sid,
                               "job": req["job"], "token": t, "addr": addr,
                               "zone": req["offer"]["zone"],
                               "instance_type": req["offer"]["instance_type"],
                               "spot": req["spot"], "daemon": req["tags"]["spillway:daemon"]}
            ids.append(iid)
        st["tokens"][t] = ids
    save()
    print(json.dumps({"instances": [{"id": i, "state": st["inst"][i]["state"],
                                     "addr": st["inst"][i]["addr"]}
                                    for i in st["tokens"][t]]}))
elif op == "describe":
    pre = (flag("preempt") or "").split()
    out = []
    for i in req["ids"]:
        x = st["inst"].get(i)
        if not x:
            continue
        if i in pre and x["state"] in ("booting", "ready"):
            x["state"], x["reason"] = "preempted", "Server.SpotInstanceTermination"
        elif x["state"] == "booting":
            x["state"] = "ready"
        out.append(x)
    save()
    print(json.dumps({"instances": out}))
elif op == "release":
    for i in req["ids"]:
        if i in st["inst"]:
            if boot and st["inst"][i]["state"] != "terminated":
                subprocess.run(["sh", boot[0], "del", boot[1], i], check=True)
            st["inst"][i]["state"] = "terminated"
    save()
    print("{}")
elif op == "list":
    daemon = req["tags"]["spillway:daemon"]
    print(json.dumps({"instances": [x for x in st["inst"].values()
                                    if x["daemon"] == daemon and x["state"] != "terminated"]}))
else:
    sys.exit(2)
