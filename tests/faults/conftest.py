"""The ssh lab (a real sshd on loopback) for the fault tests over ssh."""

from __future__ import annotations

from tests.remote.conftest import ssh_lab

__all__ = ["ssh_lab"]
