"""A secured lab: TLS certificates, SCRAM users, the standard authorizer and ACLs.

Three modes besides plaintext:

- ``sasl_ssl``: clients authenticate with SCRAM-SHA-512 (or PLAIN) over TLS.
- ``mtls``: clients authenticate with a certificate (TLS client auth).
- ``oauthbearer``: clients present an OAuth bearer token over TLS, validated by Kafka's
  default (unsecured) validator: any well-formed unsigned JWT names its principal in
  ``sub``. For trying token clients (OIDC ones included, against a token endpoint that
  issues such tokens); it proves nothing about who a client is.

Brokers talk to each other over the client listener (SCRAM as ``admin``, or
their own certificate) and to the controllers over a TLS listener that
requires the broker certificate: KRaft's controller listener cannot use SCRAM,
and leaving it plaintext would make every broker request anonymous.

Users (principals), the same in both modes:

- ``admin``: a super user, for the lab itself;
- ``alice``: an ordinary user with ACLs for everything kaudit does;
- ``nobody``: authenticates but has no ACLs, to see what kaudit says then.

Everything is generated per lab with ``openssl`` into ``STATE_DIR/security``
(private keys and passwords mode 0600) and never printed.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from kaudit.errors import InputError, LabError
from kaudit.waiting import Deadline

BROKER_PRINCIPAL = "kaudit-broker"
ADMIN = "admin"
USER = "alice"
NO_ACL_USER = "nobody"
USERS = (ADMIN, USER, NO_ACL_USER)
SCRAM_MECHANISM = "SCRAM-SHA-512"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# "CN=alice" -> "alice", so certificate and SCRAM principals have the same names.
PRINCIPAL_RULES = "RULE:^CN=([^,]+)(,.*)?$/$1/,DEFAULT"


class Security(StrEnum):
    """How clients connect to the lab."""

    plaintext = "plaintext"
    sasl_ssl = "sasl_ssl"
    mtls = "mtls"
    oauthbearer = "oauthbearer"


@dataclass(frozen=True)
class Material:
    """Paths of the generated security files of one lab."""

    directory: Path

    @property
    def ca(self) -> Path:
        """The CA certificate every client and broker trusts (PEM)."""
        return self.directory / "ca.pem"

    def keystore(self, name: str) -> Path:
        """Private key plus certificate chain of ``name`` (PEM, PKCS#8 key)."""
        return self.directory / f"{name}.pem"

    def client_properties(self, user: str) -> Path:
        """Java-style client properties for ``user``."""
        return self.directory / ("client.properties" if user == USER else f"{user}.properties")

    @property
    def passwords_file(self) -> Path:
        return self.directory / "passwords.json"

    def passwords(self) -> dict[str, str]:
        """SCRAM/PLAIN passwords by user."""
        data: dict[str, str] = json.loads(self.passwords_file.read_text(encoding="utf-8"))
        return data


def material(state_dir: str | Path) -> Material:
    """Where a lab keeps its security files."""
    return Material(Path(state_dir) / "security")


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise LabError("a secured lab needs the openssl command", hint="install openssl")
    proc = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise LabError(f"openssl {args[0]} failed: {last[:200]}")


def _private(path: Path, text: str) -> None:
    """Write a file only its owner can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def generate(state_dir: Path, mode: Security) -> Material:
    """Create the CA, certificates, passwords and client properties for a new lab."""
    if mode is Security.plaintext:
        raise InputError("a plaintext lab has no security material")
    m = material(state_dir)
    m.directory.mkdir(parents=True, exist_ok=True)
    os.chmod(m.directory, 0o700)
    d = m.directory
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-out", "ca.pem", "-days", "825", "-subj", "/CN=kaudit lab CA", cwd=d)
    os.chmod(d / "ca.key", 0o600)
    for name in (BROKER_PRINCIPAL, *USERS):
        _issue(d, name, server=name == BROKER_PRINCIPAL)
    passwords = {user: secrets.token_hex(16) for user in USERS}
    _private(m.passwords_file, json.dumps(passwords, indent=2) + "\n")
    for user in USERS:
        _private(m.client_properties(user), client_properties_text(m, mode, user, passwords[user]))
    return m


def _issue(d: Path, name: str, *, server: bool) -> None:
    """A key and a CA-signed certificate for ``name``, together in ``name.pem``."""
    ext = d / f"{name}.ext"
    ext.write_text(
        "basicConstraints=CA:FALSE\n"
        + ("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
           "extendedKeyUsage=serverAuth,clientAuth\n" if server
           else "extendedKeyUsage=clientAuth\n"),
        encoding="utf-8",
    )
    _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
             "-out", f"{name}.key", cwd=d)
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", f"/CN={name}", "-out", f"{name}.csr",
             cwd=d)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "825", "-extfile", ext.name, "-out", f"{name}.crt",
             cwd=d)
    key = (d / f"{name}.key").read_text(encoding="utf-8")
    cert = (d / f"{name}.crt").read_text(encoding="utf-8")
    _private(d / f"{name}.pem", key + cert)
    for leftover in (f"{name}.key", f"{name}.csr", f"{name}.crt", ext.name):
        (d / leftover).unlink()


def _jaas(module: str, user: str, password: str, extra: str = "") -> str:
    return (f"org.apache.kafka.common.security.{module} required "
            f'username="{user}" password="{password}"{extra};')


def _unsecured_jaas(principal: str) -> str:
    return ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            f'unsecuredLoginStringClaim_sub="{principal}";')


def client_properties_text(m: Material, mode: Security, user: str, password: str) -> str:
    """A Java client.properties for ``user``: what an operator would hand to kafka-*.sh."""
    lines = [f"# kaudit lab ({mode.value}) client settings for user {user}"]
    if mode is Security.sasl_ssl:
        lines += [
            "security.protocol=SASL_SSL",
            f"sasl.mechanism={SCRAM_MECHANISM}",
            "sasl.jaas.config=" + _jaas("scram.ScramLoginModule", user, password),
        ]
    elif mode is Security.oauthbearer:
        lines += [
            "security.protocol=SASL_SSL",
            "sasl.mechanism=OAUTHBEARER",
            "sasl.jaas.config=" + _unsecured_jaas(user),
        ]
    else:
        lines += [
            "security.protocol=SSL",
            "ssl.keystore.type=PEM",
            f"ssl.keystore.location={m.keystore(user)}",
        ]
    lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={m.ca}", ""]
    return "\n".join(lines)


def broker_properties(m: Material, mode: Security) -> dict[str, str]:
    """Settings every broker adds (its client listener is named CLIENT)."""
    props = _common_tls(m) | {
        "listener.name.controller.ssl.client.auth": "required",
        "inter.broker.listener.name": "CLIENT",
    }
    if mode is Security.sasl_ssl:
        pw = m.passwords()
        users = "".join(f' user_{u}="{p}"' for u, p in pw.items())
        props |= {
            "listener.security.protocol.map": "CONTROLLER:SSL,CLIENT:SASL_SSL",
            "sasl.enabled.mechanisms": f"{SCRAM_MECHANISM},PLAIN",
            "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
            "listener.name.client.scram-sha-512.sasl.jaas.config":
                _jaas("scram.ScramLoginModule", ADMIN, pw[ADMIN]),
            "listener.name.client.plain.sasl.jaas.config":
                _jaas("plain.PlainLoginModule", ADMIN, pw[ADMIN], users),
        }
    elif mode is Security.oauthbearer:
        props |= {
            "listener.security.protocol.map": "CONTROLLER:SSL,CLIENT:SASL_SSL",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
            # Brokers reach each other as the super user kaudit-broker, with their own
            # unsecured tokens; clients' tokens go to Kafka's default unsecured validator.
            "listener.name.client.oauthbearer.sasl.jaas.config":
                _unsecured_jaas(BROKER_PRINCIPAL),
        }
    else:
        props |= {
            "listener.security.protocol.map": "CONTROLLER:SSL,CLIENT:SSL",
            "listener.name.client.ssl.client.auth": "required",
        }
    return props


def controller_properties(m: Material) -> dict[str, str]:
    """Settings every controller adds: a TLS listener that requires a client certificate."""
    return _common_tls(m) | {
        "listener.security.protocol.map": "CONTROLLER:SSL",
        "ssl.client.auth": "required",
    }


def _common_tls(m: Material) -> dict[str, str]:
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(m.keystore(BROKER_PRINCIPAL)),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(m.ca),
        "ssl.principal.mapping.rules": PRINCIPAL_RULES,
        "authorizer.class.name": AUTHORIZER,
        "super.users": f"User:{ADMIN};User:{BROKER_PRINCIPAL}",
    }


def format_arguments(m: Material, mode: Security) -> list[str]:
    """``kafka-storage format`` arguments that create the SCRAM users with the metadata."""
    if mode is not Security.sasl_ssl:
        return []
    return [
        f"--add-scram={SCRAM_MECHANISM}=[name={user},password={password}]"
        for user, password in m.passwords().items()
    ]


def grant_user_acls(admin_config: dict[str, Any], timeout: float) -> None:
    """Give ``alice`` what kaudit needs: topics, groups, transactions, cluster reads."""
    from concurrent.futures import TimeoutError as FutureTimeout

    # Imported here: `kaudit lab --help` and completion read this module for its choices.
    from kaudit.cluster import client
    from kaudit.cluster.client import kafka_message

    KafkaException = client.KafkaException
    ResourceType, AclOperation = client.ResourceType, client.AclOperation
    principal = f"User:{USER}"
    grants = [
        (ResourceType.TOPIC, "*", AclOperation.ALL),
        (ResourceType.GROUP, "*", AclOperation.ALL),
        (ResourceType.TRANSACTIONAL_ID, "*", AclOperation.ALL),
        (ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE),
        (ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE_CONFIGS),
        (ResourceType.BROKER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE),
    ]
    bindings = [
        client.AclBinding(rtype, name, client.ResourcePatternType.LITERAL, principal, "*", op,
                          client.AclPermissionType.ALLOW)
        for rtype, name, op in grants
    ]
    admin = client.new_admin(admin_config)
    deadline = Deadline(timeout)
    while True:
        # Creating an ACL that exists is a no-op, so a slow or refused round is simply
        # asked again; the brokers may still be settling right after the lab came up.
        try:
            for future in admin.create_acls(bindings, request_timeout=10).values():
                future.result(timeout=15)
            return
        except (KafkaException, FutureTimeout) as exc:
            if deadline.expired():
                raise LabError(f"could not grant {principal} its ACLs within {timeout:g}s: "
                               f"{kafka_message(exc) or 'no answer'}") from None
            time.sleep(0.5)
