"""Price downloads against a local HTTPS server on 127.0.0.1 (a self-signed certificate made here): the
certificate is checked, and a redirect to plain http is refused before it is followed."""

from __future__ import annotations

import http.server
import shutil
import ssl
import subprocess
import threading

import pytest

from tests.reliability.conftest import one_line_error

SKY = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"
       "p5.48xlarge,H100,8,192,2048,55.04,,us-east-1\n")


def _make_cert(folder):
    """A self-signed certificate for 127.0.0.1, with the ``cryptography`` package or the ``openssl`` CLI."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    try:
        import datetime

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        if shutil.which("openssl") is None:
            pytest.skip("neither the cryptography package nor the openssl CLI is here to make a certificate")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=30)
        return cert, key
    import ipaddress

    pkey = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    c = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(pkey.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
         .sign(pkey, hashes.SHA256()))
    cert.write_bytes(c.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(pkey.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return cert, key


class _Server:
    """A loopback server in a thread; records the paths it was asked for."""

    def __init__(self, routes, tls=None):
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                hits.append(self.path)
                status, headers, body = routes(self.path)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*map(str, tls))
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def servers(tmp_path):
    cert, key = _make_cert(tmp_path)
    plain = _Server(lambda path: (200, {}, SKY.encode()))
    secure_port = {}

    def routes(path):
        if path == "/aws/vms.csv":
            return 200, {"Content-Type": "text/csv"}, SKY.encode()
        if path == "/to-http/aws/vms.csv":
            return 302, {"Location": f"http://127.0.0.1:{plain.port}/aws/vms.csv"}, b""
        if path == "/to-https/aws/vms.csv":
            return 301, {"Location": f"https://127.0.0.1:{secure_port['port']}/aws/vms.csv"}, b""
        return 404, {}, b"no"

    secure = _Server(routes, tls=(cert, key))
    secure_port["port"] = secure.port
    yield secure, plain, cert
    secure.close()
    plain.close()


def test_prices_come_over_verified_https(run_cli, servers):
    secure, plain, cert = servers
    url = f"https://127.0.0.1:{secure.port}/aws/vms.csv"
    proc = run_cli("catalog", "check-updates", "--url", url, "--price-date", "2026-12-01",
                   env={"SSL_CERT_FILE": str(cert)})
    assert proc.returncode == 0, proc.stderr
    assert "+ aws:p5.48xlarge" in proc.stdout
    assert secure.hits == ["/aws/vms.csv"] and plain.hits == []


def test_an_https_to_https_redirect_is_followed(run_cli, servers):
    secure, plain, cert = servers
    proc = run_cli("catalog", "check-updates", "--url", f"https://127.0.0.1:{secure.port}/to-https/aws/vms.csv",
                   env={"SSL_CERT_FILE": str(cert)})
    assert proc.returncode == 0, proc.stderr
    assert secure.hits == ["/to-https/aws/vms.csv", "/aws/vms.csv"]


def test_a_redirect_to_plain_http_is_refused_before_it_is_followed(run_cli, servers):
    secure, plain, cert = servers
    proc = run_cli("catalog", "check-updates", "--url", f"https://127.0.0.1:{secure.port}/to-http/aws/vms.csv",
                   "--apply", env={"SSL_CERT_FILE": str(cert)})
    line = one_line_error(proc)
    assert "redirects to 'http://" in line and "refused" in line
    assert plain.hits == []  # the plain server was never asked
    assert "p5.48xlarge" not in proc.stdout


def test_an_untrusted_certificate_is_one_line(run_cli, servers, tmp_path):
    secure, plain, _cert = servers
    other = tmp_path / "other"
    other.mkdir()
    other_cert, _ = _make_cert(other)  # trust a different certificate than the server's
    line = one_line_error(run_cli("catalog", "check-updates", "--url", f"https://127.0.0.1:{secure.port}/aws/vms.csv",
                                  env={"SSL_CERT_FILE": str(other_cert)}))
    assert "certificate verify failed" in line


def test_plain_http_is_refused_without_a_connection(run_cli, servers):
    secure, plain, _cert = servers
    line = one_line_error(run_cli("catalog", "check-updates", "--url", f"http://127.0.0.1:{plain.port}/aws/vms.csv"))
    assert "only https://" in line and plain.hits == []
