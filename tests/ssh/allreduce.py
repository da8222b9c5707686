# allreduce.py: one rank of a TCP all-reduce across a gang's nodes, for
# tests/ssh/*.sh: rank 0 listens on MASTER_ADDR:MASTER_PORT, every other rank
# sends RANK+1 and gets the sum back; each prints what it saw (its nodes,
# its host's SPILLWAY_TEST_HOST, the sum) and exits 0 when the sum is right.
import os, socket, sys, time
rank = int(os.environ['RANK']); world = int(os.environ['WORLD_SIZE'])
addr = os.environ['MASTER_ADDR']; port = int(os.environ['MASTER_PORT'])
if rank == 0:
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port)); srv.listen(world); total = rank + 1; peers = []
    while len(peers) < world - 1:
        c, _ = srv.accept(); total += int(c.recv(64).decode()); peers.append(c)
    for c in peers: c.sendall(str(total).encode())
else:
    for i in range(300):
        try: c = socket.create_connection((addr, port), timeout=5); break
        except OSError: time.sleep(0.05)
    c.sendall(str(rank + 1).encode()); total = int(c.recv(64).decode())
print('rank %d of %d nodes %s on %s sum=%d' % (rank, world, os.environ['SPILLWAY_NODE_IPS'],
      os.environ['SPILLWAY_TEST_HOST'], total))
sys.exit(0 if total == world * (world + 1) // 2 else 1)
