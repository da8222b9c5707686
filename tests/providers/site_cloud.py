"""site_cloud.py: a site's cloud for the command provider's tests, speaking
the contract of src/providers/command/command.h.  usage: site_cloud.py DIR OP
(stdin: the request).  DIR holds state.json (instances, tokens), calls.log (a
line per call) and the files that steer it: `refuse` (a JSON error object:
acquire answers it), `hang` (acquire sleeps 30 s), `preempt` (site ids that
describe reports preempted)."""
import json
import os
import sys
import time

d, op = sys.argv[1], sys.argv[2]
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
            st["inst"][iid] = {"id": iid, "state": "booting", "spillway_id": sid,
                               "job": req["job"], "token": t, "addr": "10.9.0.%d" % st["next"],
                               "zone": req["offer"]["zone"],
                               "instance_type": req["offer"]["instance_type"],
                               "spot": req["spot"], "daemon": req["tags"]["spillway:daemon"]}
            ids.append(iid)
        st["tokens"][t] = ids
    save()
    print(json.dumps({"instances": [{"id": i, "state": st["inst"][i]["state"]}
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
            st["inst"][i]["state"] = "terminated"
    save()
    print("{}")
elif op == "list":
    daemon = req["tags"]["spillway:daemon"]
    print(json.dumps({"instances": [x for x in st["inst"].values()
                                    if x["daemon"] == daemon and x["state"] != "terminated"]}))
else:
    sys.exit(2)
