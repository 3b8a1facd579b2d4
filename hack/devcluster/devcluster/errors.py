"""The two ways the script fails, told apart by exit code so callers (the e2e conftest) can skip."""

from __future__ import annotations

EXIT_FAILED = 1
EXIT_TOOLCHAIN_MISSING = 3


class DevClusterError(Exception):
    """Something went wrong; the message says what and where to look."""

    exit_code = EXIT_FAILED


class ToolchainMissing(DevClusterError):
    """No binaries are built and Go (or openssl) is not there to build them."""

    exit_code = EXIT_TOOLCHAIN_MISSING
