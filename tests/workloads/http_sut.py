"""http_sut.py MODE PORT LOG [ARGS...]: an HTTP system under test for `footprint load --http`
with known service times. POST / takes a query's body (JSON with "id"); the answer depends on
MODE:
  fixed MS          after MS milliseconds, a JSON body with Content-Length
  stream D G N      server-sent events: the first after D ms, then N-1 more G ms apart, each
                    a chunk of a chunked body, then `data: [DONE]`
  error MS          as fixed, but every 4th query (id % 4 == 3) gets 500
  die MS            as fixed; after 10 answers the process exits with status 3
  accuracy K S      at once, the answer of each sample I of the query, `label-I` but `wrong`
                    for every I that K divides, comma-separated, as text/plain; with S = 1
                    as server-sent events instead, `label-` and `I` two events of a sample
LOG: one line per answered query, `ID RECEIVED_NS FIRST_SENT_NS LAST_SENT_NS` on the run's timeline
(CLOCK_MONOTONIC minus $FOOTPRINT_T0_NS): the ground truth the tests compare with."""
import http.server
import json
import os
import sys
import threading
import time

MODE, PORT, LOG = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ARGS = [float(a) for a in sys.argv[4:]]
T0 = int(os.environ.get("FOOTPRINT_T0_NS", "0"))
log = open(LOG, "w", buffering=1)
lock = threading.Lock()
answered = 0


def now():
    return time.monotonic_ns() - T0


def record(qid, received, first, done):
    """The query's line, written before its answer ends: footprint stops this server once the
    last answer is read, and a line written after it could be lost to that SIGTERM."""
    with lock:
        log.write(f"{qid} {received} {first} {done}\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # each event leaves at once, as LLM servers send them

    def log_message(self, *args):
        pass

    def do_POST(self):
        global answered
        received = now()
        body = self.rfile.read(int(self.headers["Content-Length"]))
        qid = json.loads(body)["id"]
        if MODE == "stream":
            self.stream(qid, received)
        elif MODE == "accuracy":
            self.answer(qid, json.loads(body)["samples"], received)
        else:
            time.sleep(ARGS[0] / 1000)
            status = 500 if MODE == "error" and qid % 4 == 3 else 200
            payload = json.dumps({"id": qid, "class": 7}).encode()
            self.whole(qid, received, status, "application/json", payload)
        with lock:
            answered += 1
            if MODE == "die" and answered == 10:
                os._exit(3)

    def stream(self, qid, received):
        delay_ms, gap_ms, tokens = ARGS[0], ARGS[1], int(ARGS[2])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        first = None
        for k in range(tokens):
            time.sleep((delay_ms if k == 0 else gap_ms) / 1000)
            sent = now()
            self.chunk(f"data: {json.dumps({'id': qid, 'token': k})}\n\n")
            first = first or sent
        record(qid, received, first, now())  # before the end: the client cannot have read it
        self.chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def answer(self, qid, samples, received):
        wrong_every, streamed = int(ARGS[0]), ARGS[1] == 1
        answers = ["wrong" if i % wrong_every == 0 else f"label-{i}" for i in samples]
        if streamed:
            parts = [p for j, a in enumerate(answers)
                     for p in ([","] if j else []) + ([a] if a == "wrong" else ["label-", a[6:]])]
            payload = "".join(f"data: {p}\n\n" for p in parts).encode() + b"data: [DONE]\n\n"
        else:
            payload = ",".join(answers).encode()
        self.whole(qid, received, 200, "text/event-stream" if streamed else "text/plain", payload)

    def whole(self, qid, received, status, content_type, payload):
        """An answer of one body, with its Content-Length."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        done = now()
        record(qid, received, done, done)
        self.wfile.write(payload)
        self.wfile.flush()

    def chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
server.serve_forever()
