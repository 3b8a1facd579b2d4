"""A client certificate sent as Go's clients send it: the certificate file's chain, nothing added.

A kubeconfig's client certificate is usually the leaf alone. When a context has no chain for
it, OpenSSL builds one from the context's trust store and sends it whole, the root CA included
(``ssl_add_cert_chain`` in ``ssl/statem/statem_lib.c``: "auto chain"). Go's ``crypto/tls`` sends
the file's certificates only, so client-go, kube-scheduler and kubectl send the leaf.

The API server verifies the client certificate on every request, not once per connection
(v1.36.3 ``staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go``
``Authenticator.AuthenticateRequest``; no cache), and takes the certificates after the leaf as
intermediates. With the root CA among them, both of its x509 authenticators (request-header's,
then client-certificate's) verify more signatures. Measured: 215 µs of CPU per request against
72 µs, with P-256 certificates (docs/operator-io.md, "Client certificates").

Python's ``ssl`` module has no switch for ``SSL_MODE_NO_AUTO_CHAIN``. :func:`send_own_chain_only`
sets it on the context's ``SSL_CTX`` through ``ctypes``, on CPython, for an ``_ssl._SSLContext``
(whose C struct holds that pointer right after the object header), with the ``libssl`` found
through ``_ssl``'s own handle, once it has checked that this is the OpenSSL ``_ssl`` was built
against (the same ``OpenSSL_version_num``) and that OpenSSL reads the context's own options at
that address. Anywhere else it leaves the context as it is, says so once in the log, and
returns False: the certificate still works, it only costs the server more.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import ssl
import sys
from typing import Any

log = logging.getLogger(__name__)

SSL_CTRL_MODE = 33  # openssl/ssl.h
SSL_MODE_NO_AUTO_CHAIN = 0x8
_CTX_END = object.__basicsize__ + ctypes.sizeof(ctypes.c_void_p)  # PySSLContext's ``SSL_CTX *ctx`` ends here


@functools.cache
def _libssl() -> Any | None:
    """``SSL_CTX_ctrl`` and ``SSL_CTX_get_options`` of the OpenSSL that ``_ssl`` is linked with
    (looked up through ``_ssl``'s own handle, or the interpreter's when ``_ssl`` is built in)."""
    if sys.implementation.name != "cpython":
        return None
    try:
        import _ssl

        library = ctypes.CDLL(getattr(_ssl, "__file__", None))
        ctrl, get_options = library.SSL_CTX_ctrl, library.SSL_CTX_get_options
        version = library.OpenSSL_version_num
    except (ImportError, OSError, AttributeError, TypeError):
        return None
    version.argtypes, version.restype = [], ctypes.c_ulong
    if version() != ssl.OPENSSL_VERSION_NUMBER:  # another OpenSSL than ``_ssl``'s: its structs may differ
        return None
    ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
    ctrl.restype = ctypes.c_long
    get_options.argtypes = [ctypes.c_void_p]
    # uint64_t since OpenSSL 3.0, unsigned long before
    get_options.restype = ctypes.c_uint64 if ssl.OPENSSL_VERSION_INFO >= (3,) else ctypes.c_ulong
    return library


def _ssl_ctx(context: ssl.SSLContext, library: Any) -> int | None:
    """The ``SSL_CTX *`` of ``context``: CPython's ``PySSLContext`` holds it right after the
    object header. None for anything but such an object, or unless OpenSSL reads the context's
    own options there."""
    import _ssl

    if not isinstance(context, _ssl._SSLContext) or type(context).__basicsize__ < _CTX_END:
        return None
    address = ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value
    if not address or library.SSL_CTX_get_options(address) != context.options:
        return None
    return int(address)


@functools.cache
def _say_once() -> None:
    log.info(
        "client certificate: this Python's ssl cannot turn off OpenSSL's chain building; the CA "
        "certificates of the trust store may be sent after it, which costs the API server more per request"
    )


def send_own_chain_only(context: ssl.SSLContext) -> bool:
    """Send the loaded certificate file's chain only, never one built from the trust store.
    False when this interpreter's ``ssl`` cannot be reached (the context is left unchanged)."""
    library = _libssl()
    if library is None or (address := _ssl_ctx(context, library)) is None:
        _say_once()
        return False
    library.SSL_CTX_ctrl(address, SSL_CTRL_MODE, SSL_MODE_NO_AUTO_CHAIN, None)
    return True


def load_client_certificate(context: ssl.SSLContext, cert_path: str, key_path: str | None) -> None:
    """``context.load_cert_chain``, sending what the files hold and nothing more."""
    context.load_cert_chain(cert_path, key_path)
    send_own_chain_only(context)
