"""A debugged program gone wild, for tests/server/test_hub_limits.py: logs in to the hub with the session's token and
sends 100,000 valid events as fast as the socket takes them (80,000 scalars, 20,000 findings each naming its own
file), then a bye.  Usage: python hub_flood.py HOST PORT TOKEN FOLDER
"""

import json
import socket
import sys

host, port, token, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
lines = [json.dumps({"type": "hello", "token": token, "pid": 77, "script": f"{folder}/t.py"})]
for step in range(100_000):
    if step % 5 == 0:
        finding = {"kind": "dynamics", "severity": "info", "message": "m", "file": f"{folder}/f{step}.py", "line": 1}
        lines.append(json.dumps({"type": "finding", "pid": 77, "step": step, "finding": finding}))
    else:
        lines.append(json.dumps({"type": "scalars", "pid": 77, "step": step, "values": {"loss": 0.5}}))
lines.append(json.dumps({"type": "bye", "pid": 77}))
with socket.create_connection((host, port)) as connection:
    connection.sendall(("\n".join(lines) + "\n").encode())
    connection.shutdown(socket.SHUT_WR)
    while connection.recv(1 << 16):  # the welcome, then the end once the hub closes or the test ends the session
        pass
