"""SSH key material for the lab: ed25519 key pairs generated in-process (no ssh-keygen per node)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


@dataclass(frozen=True)
class KeyPair:
    private_openssh: bytes  # "-----BEGIN OPENSSH PRIVATE KEY-----" block
    public_line: str  # "ssh-ed25519 AAAA... comment"

    @property
    def public_blob(self) -> str:
        """The "ssh-ed25519 AAAA..." part without the comment, as known_hosts wants it."""
        return " ".join(self.public_line.split()[:2])


def generate_keypair(comment: str) -> KeyPair:
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return KeyPair(private_openssh=private, public_line=f"{public.decode()} {comment}")


def write_private(path: Path, key: KeyPair) -> None:
    """Write a private key with mode 0600 from the start (ssh and sshd refuse looser modes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key.private_openssh)


def write_secret(path: Path, text: str) -> None:
    """Write a small secret file readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
