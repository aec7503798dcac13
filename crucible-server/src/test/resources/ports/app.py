"""A server a test starts inside a session: what a dev server does, and what it saw (PortsTest)."""
import base64, hashlib, http.server, json, os, socketserver, sys, threading

SEEN = []  # (method, path, headers, peer port) of every request, in order
BOOT = os.urandom(8).hex()  # this server's own: another session's server has another
LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body, kind="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def _record(self):
        with LOCK:
            SEEN.append({"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                         "peer": self.client_address[1]})

    def do_GET(self):
        self._record()
        if self.path.startswith("/ws"):
            return self._websocket()
        if self.path.startswith("/seen"):
            with LOCK:
                return self._send(200, json.dumps(SEEN).encode())
        if self.path.startswith("/stream"):  # chunked, in pieces: n bytes of a repeating pattern
            n = int(self.path.split("=")[1])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            piece = bytes(range(256)) * 256
            left = n
            while left:
                part = piece[: min(left, len(piece))]
                self.wfile.write(b"%x\r\n" % len(part) + part + b"\r\n")
                left -= len(part)
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path.startswith("/peer"):  # which connection asked (the proxy's port), and which server answered
            return self._send(200, json.dumps({"peer": self.client_address[1], "boot": BOOT}).encode())
        if self.path.startswith("/let-go"):  # a kept-alive answer (no Connection: close), then the connection closed
            self._send(200, json.dumps({"peer": self.client_address[1]}).encode())
            self.close_connection = True
            return
        if self.path.startswith("/unframed"):  # no length, not chunked: the body ends where the connection does
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"until the end")
            self.close_connection = True
            return
        if self.path.startswith("/cookie"):
            return self._send(200, b"{}", extra=[("Set-Cookie", "app=1; Path=/"),
                                                 ("Access-Control-Allow-Origin", "*")])
        if self.path.startswith("/headers"):  # what an app may say of its answer, and what a hostile one adds
            return self._send(200, b"{}", extra=[
                ("Cache-Control", "max-age=60"), ("ETag", '"v1"'), ("Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT"),
                ("Vary", "Accept"), ("Content-Language", "en"), ("Location", "/elsewhere"),
                ("Clear-Site-Data", '"*"'), ("Service-Worker-Allowed", "/"), ("Content-Security-Policy", "script-src *"),
                ("Content-Security-Policy-Report-Only", "script-src *"), ("Access-Control-Allow-Origin", "*"),
                ("Access-Control-Allow-Credentials", "true"), ("Set-Cookie", "tossed=1; Domain=localhost; Path=/"),
                ("Set-Cookie", "crucible_preview=forged; Path=/"), ("Set-Cookie", "own=1; Path=/"),
                ("Refresh", "0; url=/elsewhere"), ("Link", "</sw.js>; rel=serviceworker"),
                ("Permissions-Policy", "camera=*"), ("Strict-Transport-Security", "max-age=31536000"),
                ("Cross-Origin-Opener-Policy", "unsafe-none"), ("Origin-Agent-Cluster", "?0"),
                ("WWW-Authenticate", 'Basic realm="api"'), ("X-Frame-Options", "ALLOWALL"), ("X-App", "1")])
        name = self.path.split("?")[0].strip("/")
        if name in ("page", "page2"):  # pages a browser loads: page.html (on the API's origin), page2.html (its own)
            page = open(os.path.join(os.path.dirname(__file__), name + ".html"), "rb").read()
            return self._send(200, page, kind="text/html")
        if self.path.startswith("/status/"):  # the app's own answer with that status and a body of its own
            code = int(self.path.split("/")[2])
            return self._send(code, b"app says %d" % code, kind="text/plain")
        if self.path.startswith("/empty/"):  # the same with no body at all
            return self._send(int(self.path.split("/")[2]), b"", kind="text/plain")
        return self._send(200, json.dumps({"path": self.path}).encode())

    do_HEAD = do_GET
    do_DELETE = do_GET
    do_OPTIONS = do_GET

    def do_POST(self):
        self._record()
        body = self._body()
        self._send(200, json.dumps({"length": len(body), "sha256": hashlib.sha256(body).hexdigest()}).encode())

    do_PUT = do_POST
    do_PATCH = do_POST

    def _websocket(self):
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept.decode())
        self.end_headers()
        self.wfile.flush()
        while True:  # echo text frames back, upper-cased: proof they went through the session's server
            head = self.rfile.read(2)
            if len(head) < 2:
                return
            op, n = head[0] & 0x0F, head[1] & 0x7F
            if n == 126:
                n = int.from_bytes(self.rfile.read(2), "big")
            elif n == 127:
                n = int.from_bytes(self.rfile.read(8), "big")
            mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if op == 8:
                self.wfile.write(b"\x88\x00")
                return
            reply = data.upper()
            size = bytes([len(reply)]) if len(reply) < 126 else b"\x7e" + len(reply).to_bytes(2, "big")
            self.wfile.write(bytes([0x81]) + size + reply)
            self.wfile.flush()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
