"""Read Java-style ``client.properties`` files and translate them for librdkafka (and
write one, :func:`properties_text`, for Kafka's own Java tools).

Operators already have a properties file for Kafka's own tools. kaudit reads
it as it is: keys the Java client and librdkafka share pass through,
Java-only keys are translated where librdkafka has an equivalent, and keys
that cannot work (JKS stores, Java class names) are rejected with the
librdkafka key to use instead, naming the file and line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from kaudit.connection.redact import is_secret_key, register_secret
from kaudit.errors import FileInputError, InputError, unreadable


@dataclass(frozen=True)
class PropertiesFile:
    """Key/value pairs read from a properties file, with the line of each key."""

    path: str
    values: dict[str, str]
    lines: dict[str, int] = field(default_factory=dict)

    def line_of(self, key: str) -> int | None:
        """The line where ``key`` was set, if it came from this file."""
        return self.lines.get(key)


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _split_key_value(logical: str) -> tuple[str, str]:
    # Java: the key ends at the first unescaped '=', ':' or whitespace.
    i = 0
    while i < len(logical):
        ch = logical[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = logical[:i]
    rest = logical[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str, path: str) -> PropertiesFile:
    """Parse Java properties text: comments, continuations, escapes, ``=``/``:``/space."""
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    physical = text.splitlines()
    n = 0
    while n < len(physical):
        start = n + 1
        line = physical[n].lstrip(" \t\f")
        n += 1
        if not line or line[0] in "#!":
            continue
        # A line ending in an odd number of backslashes continues on the next.
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and n <= len(physical):
            line = line[:-1] + (physical[n].lstrip(" \t\f") if n < len(physical) else "")
            n += 1
        key, value = _split_key_value(line)
        if not key:
            raise FileInputError(path, start, "a property has no key")
        try:
            value = expand_references(value)
        except InputError as exc:
            raise FileInputError(path, start, exc.message) from None
        values[key] = value
        lines[key] = start
        if is_secret_key(key):
            register_secret(value)
    return PropertiesFile(path=path, values=values, lines=lines)


# Kafka's EnvVarConfigProvider and FileConfigProvider syntax, so secrets can stay out of
# the file: ${env:NAME} and ${file:PATH:KEY} (KEY read from the properties file PATH).
_REFERENCE = re.compile(r"\$\{(env|file):([^}]*)\}")


def has_reference(value: str) -> bool:
    """True when ``value`` takes (part of) itself from the environment or a file."""
    return bool(_REFERENCE.search(value))


def expand_references(value: str) -> str:
    """Replace ``${env:NAME}`` and ``${file:PATH:KEY}`` in ``value``."""

    def resolve(match: re.Match[str]) -> str:
        kind, arg = match.groups()
        if kind == "env":
            if arg not in os.environ:
                raise InputError(f"${{env:{arg}}}: environment variable {arg} is not set")
            return os.environ[arg]
        path, sep, key = arg.rpartition(":")
        if not sep or not path:
            raise InputError(f"${{file:{arg}}}: expected ${{file:PATH:KEY}}")
        found = read_properties(path).values.get(key)
        if found is None:
            raise InputError(f"${{file:{arg}}}: {path} has no key {key!r}")
        return found

    return _REFERENCE.sub(resolve, value)


def read_properties(path: str | Path) -> PropertiesFile:
    """Read a properties file; unreadable files are an input error (exit 2)."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(p, exc) from None
    return parse_properties(text, str(p))


# Java client keys that mean nothing to a librdkafka client kaudit builds
# itself (serializers are chosen by kaudit): dropped silently.
_IGNORED_JAVA_KEYS = frozenset(
    {
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
        "ssl.truststore.type",
        "ssl.keystore.type",
        "ssl.protocol",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "sasl.login.class",
        "metric.reporters",
        "interceptor.classes",
    }
)

_JAAS = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)"
    r"(?P<options>.*?);?\s*$",
    re.DOTALL,
)
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))')

_SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def _jaas_options(text: str) -> tuple[str, dict[str, str]] | None:
    match = _JAAS.match(text)
    if not match:
        return None
    options = {
        m.group(1): (m.group(2) if m.group(2) is not None else m.group(3))
        for m in _JAAS_OPTION.finditer(match.group("options"))
    }
    return match.group("module"), options


def translate_java_properties(props: PropertiesFile) -> dict[str, str]:
    """Turn a properties file into librdkafka configuration.

    Raises :class:`FileInputError` (file:line) for keys that cannot be
    translated, naming the librdkafka key to use instead.
    """
    out: dict[str, str] = {}
    src = props.values
    store_type = {k: src.get(f"ssl.{k}.type", "").upper() for k in ("truststore", "keystore")}
    for key, value in src.items():
        if key in _IGNORED_JAVA_KEYS or key.startswith("config.providers"):
            continue  # config providers: kaudit resolves ${env:...} and ${file:...} itself
        if key == "sasl.jaas.config":
            _translate_jaas(props, value, out)
        elif key == "ssl.truststore.location":
            out.update(_truststore(props, value, store_type["truststore"]))
        elif key == "ssl.truststore.password":
            continue  # only meaningful for JKS/PKCS12 truststores, rejected above
        elif key == "ssl.truststore.certificates":
            out["ssl.ca.pem"] = value
        elif key == "ssl.keystore.location":
            out.update(_keystore(props, value, store_type["keystore"]))
        elif key == "ssl.keystore.certificate.chain":
            out["ssl.certificate.pem"] = value
        elif key == "ssl.keystore.key":
            out["ssl.key.pem"] = value
        elif key == "ssl.endpoint.identification.algorithm":
            out[key] = value if value else "none"
        elif key.endswith(".class") or key.endswith(".classes"):
            _fail(props, key, f"{key} names a Java class; librdkafka cannot load it")
        else:
            out[key] = value
    if "ssl.keystore.password" in out and "ssl.keystore.location" not in out:
        # A PEM key's password is ssl.key.password in librdkafka.
        out["ssl.key.password"] = out.pop("ssl.keystore.password")
    return out


def _fail(props: PropertiesFile, key: str, message: str) -> NoReturn:
    """Refuse ``key``, naming the file and the line it is set on."""
    raise FileInputError(props.path, props.line_of(key), message)


def _translate_jaas(props: PropertiesFile, value: str, out: dict[str, str]) -> None:
    """sasl.jaas.config as librdkafka's SASL keys: a mechanism for its login module and the
    credentials in its options."""
    key = "sasl.jaas.config"
    parsed = _jaas_options(value)
    if parsed is None:
        _fail(
            props,
            key,
            "sasl.jaas.config is not a JAAS entry "
            '(\'<LoginModule> required username="..." password="...";\')',
        )
    module, options = parsed
    short = module.rsplit(".", 1)[-1]
    if short == "PlainLoginModule":
        out.setdefault("sasl.mechanism", props.values.get("sasl.mechanism", "PLAIN"))
    elif short == "ScramLoginModule":
        mech = props.values.get("sasl.mechanism", "").upper()
        if mech not in _SCRAM_MECHANISMS:
            _fail(
                props,
                key,
                "ScramLoginModule needs sasl.mechanism=SCRAM-SHA-256 or SCRAM-SHA-512",
            )
    elif short == "OAuthBearerLoginModule":
        _translate_oauthbearer(options, out)
        return  # OIDC client credentials, not a username and password
    else:
        _fail(
            props,
            key,
            f"login module {short} cannot be translated for librdkafka; "
            "use sasl.username/sasl.password (PLAIN, SCRAM) or "
            "sasl.kerberos.* keys instead",
        )
    if "username" not in options or "password" not in options:
        _fail(props, key, f"{short} in sasl.jaas.config needs username and password")
    out["sasl.username"] = options["username"]
    out["sasl.password"] = options["password"]
    register_secret(options["password"])


def _translate_oauthbearer(options: dict[str, str], out: dict[str, str]) -> None:
    """OAuthBearerLoginModule's options as librdkafka's OIDC keys."""
    out.setdefault("sasl.mechanism", "OAUTHBEARER")
    for java_opt, rd_key in (
        ("clientId", "sasl.oauthbearer.client.id"),
        ("clientSecret", "sasl.oauthbearer.client.secret"),
        ("scope", "sasl.oauthbearer.scope"),
    ):
        if java_opt in options:
            out[rd_key] = options[java_opt]
            if java_opt == "clientSecret":
                register_secret(options[java_opt])
    if "clientId" in options:
        out.setdefault("sasl.oauthbearer.method", "oidc")
    elif "unsecuredLoginStringClaim_sub" in options:
        # Java's unsecured tokens (a test cluster's): librdkafka builds the same ones.
        out["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
        out["sasl.oauthbearer.config"] = \
            f"principal={options['unsecuredLoginStringClaim_sub']}"


def _truststore(props: PropertiesFile, location: str, declared: str) -> dict[str, str]:
    """ssl.truststore.location as librdkafka's CA location: a PEM file only."""
    kind = declared or _store_kind_from_name(location)
    if kind != "PEM":
        _fail(
            props,
            "ssl.truststore.location",
            f"{kind or 'JKS'} truststores cannot be read by librdkafka; "
            "export the CA certificate as PEM and set ssl.ca.location",
        )
    return {"ssl.ca.location": location}


def _keystore(props: PropertiesFile, location: str, declared: str) -> dict[str, str]:
    """ssl.keystore.location as librdkafka's keys: a PKCS12 keystore, or a PEM file holding
    both the certificate and the key."""
    kind = declared or _store_kind_from_name(location)
    if kind == "PKCS12":
        return {"ssl.keystore.location": location}
    if kind == "PEM":
        return {"ssl.certificate.location": location, "ssl.key.location": location}
    _fail(
        props,
        "ssl.keystore.location",
        f"{kind or 'JKS'} keystores cannot be read by librdkafka; use "
        "ssl.certificate.location and ssl.key.location (PEM) or a PKCS12 "
        "keystore",
    )


def _store_kind_from_name(location: str) -> str:
    lower = location.lower()
    if lower.endswith((".p12", ".pfx")):
        return "PKCS12"
    if lower.endswith((".pem", ".crt", ".cer")):
        return "PEM"
    return "JKS"


def properties_text(options: dict[str, str]) -> str:
    """Java client options as a .properties file: backslashes and line breaks escaped, and
    every character outside printable ASCII as \\uXXXX (Java reads the file as Latin-1)."""
    def escape(value: str) -> str:
        value = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        return "".join(c if " " <= c <= "~" else f"\\u{ord(c):04x}" for c in value)

    return "".join(f"{key}={escape(value)}\n" for key, value in sorted(options.items()))


def unsecured_principal(props: dict[str, str]) -> str:
    """The subject of librdkafka's unsecured OAUTHBEARER tokens, "" when not configured."""
    if props.get("enable.sasl.oauthbearer.unsecure.jwt", "").lower() != "true":
        return ""
    for word in props.get("sasl.oauthbearer.config", "").split():
        name, _, value = word.partition("=")
        if name == "principal":
            return value
    return ""
