"""runformat.redact: every credential form is hidden where it is recorded and again where it is read.

Each secret below is a made-up value of the right shape (none is a real credential).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collector import fingerprint as fp
from runformat.redact import REDACTED, redact, redact_argv, redact_command_line, redact_entry, redact_image

GITHUB = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
HF = "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"
SLACK = {kind: f"xox{kind}-1234567890-0987654321-AbCdEfGhIjKlMnOp" for kind in "abprs"}
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_STS_ID = "ASIAY34FZKBOKMUTVV7A"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\nAAAAC3NzaC1lZDI1NTE5\n-----END OPENSSH PRIVATE KEY-----"

# (recorded text, the secret that must not survive, what must survive)
FORMS = [
    ("http://alice:s3cr3t-pa55@proxy.example:3128", "s3cr3t-pa55", "http://alice:[redacted]@proxy.example:3128"),
    ("http://alice:pa/ss/w0rd@proxy.example:3128", "pa/ss/w0rd", "http://alice:[redacted]@proxy.example:3128"),
    ("http://alice:p@ss@w0rd@proxy.example:3128", "ss@w0rd", "http://alice:[redacted]@proxy.example:3128"),
    ("socks5h://bob:hunter2@10.0.0.1:1080", "hunter2", "socks5h://bob:[redacted]@10.0.0.1:1080"),
    (f"https://{GITHUB}@github.com/org/repo.git", GITHUB, "https://[redacted]@github.com/org/repo.git"),
    ("https://sometoken@example.com/x", "sometoken", "https://[redacted]@example.com/x"),
    ("https://oauth2:glpat-AbCdEfGhIjKlMnOpQrSt@gitlab.example/x", "glpat-AbCdEfGhIjKlMnOpQrSt", "https://oauth2:[redacted]@gitlab.example/x"),
    ("compute,utility,https://u:pw9@caps.example/x", "pw9", "compute,utility,https://u:[redacted]@caps.example/x"),
    ("https://hub.example/m?version=2&access_token=abc123&sig=Zz9", "abc123", "https://hub.example/m?version=2&access_token=[redacted]&sig=[redacted]"),
    ("--token=xyz123", "xyz123", "--token=[redacted]"),
    ("password=hunter2 user=bob", "hunter2", "password=[redacted] user=bob"),
    ("db_password='two words'", "two words", "db_password='[redacted]'"),
    ('{"api_key": "k-123", "n": 4}', "k-123", '{"api_key": "[redacted]", "n": 4}'),
    ("Authorization: Bearer abc.def.ghi", "abc.def.ghi", "Authorization: Bearer [redacted]"),
    ("Proxy-Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz", "Proxy-Authorization: Basic [redacted]"),
    ("-H 'Authorization: token 0123456789abcdef'", "0123456789abcdef", "-H 'Authorization: token [redacted]'"),
    ("bearer eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl", "eyJzdWIiOi", "bearer [redacted]"),
    (f"key id {AWS_ID} in use", AWS_ID, "key id [redacted] in use"),
    (f"{AWS_STS_ID}", AWS_STS_ID, "[redacted]"),
    (f"secret {AWS_SECRET}", AWS_SECRET, "secret [redacted]"),
    (f"aws_secret_access_key={AWS_SECRET}", AWS_SECRET, "aws_secret_access_key=[redacted]"),
    (f"gh {GITHUB}", GITHUB, "gh [redacted]"),
    (f"pat {GITHUB_PAT}", GITHUB_PAT, "pat [redacted]"),
    (f"HF {HF}.", HF, "HF [redacted]."),
    *[(f"slack {token}", token, "slack [redacted]") for token in SLACK.values()],
    (f"before\n{PRIVATE_KEY}\nafter", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU=", "before\n[redacted private key]\nafter"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA", "MIIEowIBAAKCAQEA", "[redacted private key]"),
]

# Values that are facts, not secrets: recorded as they are.
KEPT = [
    "GPU-8f4c2d3e-1a2b-3c4d-5e6f-7a8b9c0d1e2f,MIG-GPU-8f4c2d3e-1a2b-3c4d-5e6f-7a8b9c0d1e2f/1/0",
    "/usr/local/cuda-12.4/lib64:/usr/lib/x86_64-linux-gnu",
    "compute,utility",
    "git+https://github.com/org/repo@v1.0",
    "--signal=TERM --label pytorch-2.9-cu124",
    "Basic information about basic blocks",
    "USE_CUDNN=ON, TORCH_VERSION=2.9.0, CUDA_VERSION=12.4",
    "http://proxy.example:3128",
    "registry.example:5000/ns/img@sha256:" + "0123456789abcdef" * 4,
]


@pytest.mark.parametrize("text, secret, expected", FORMS, ids=[f[2][:40] for f in FORMS])
def test_every_credential_form_is_redacted(text: str, secret: str, expected: str) -> None:
    out = redact(text)
    assert out == expected
    assert secret not in out
    assert redact(out) == out  # idempotent: the reporter re-applies it to what was recorded


@pytest.mark.parametrize("text", KEPT)
def test_facts_are_kept(text: str) -> None:
    assert redact(text) == text
    assert redact_image(text) == text


def test_long_hex_ids_are_kept_outside_the_environment() -> None:
    commit = "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2"
    assert redact_entry("torch", "git_version", commit) == commit
    assert redact_entry("env", "TORCH_SOMETHING", commit) == REDACTED  # an unexplained random value in a variable


@pytest.mark.parametrize(
    "image, expected",
    [
        ("alice:pa/ss@registry.example/team/img:2.9", "alice:[redacted]@registry.example/team/img:2.9"),
        ("alice:p@ss@registry.example/img", "alice:[redacted]@registry.example/img"),
        (f"{GITHUB}@ghcr.io/org/img:tag", "[redacted]@ghcr.io/org/img:tag"),
        ("https://bob:hunter2@registry.example/img", "https://bob:[redacted]@registry.example/img"),
        ("u:pw@registry.example/img@sha256:" + "ab" * 32, "u:[redacted]@registry.example/img@sha256:" + "ab" * 32),
        ("pytorch/pytorch:2.9.0-cuda12.4", "pytorch/pytorch:2.9.0-cuda12.4"),
    ],
)
def test_image_names_lose_their_userinfo(image: str, expected: str) -> None:
    assert redact_image(image) == expected
    assert redact_entry("container", "image", image) == expected
    assert redact_image(expected) == expected


def test_command_lines_hide_secret_flags_joined_or_apart() -> None:
    argv = ["collector", "run", "--api-key", "abc", "--token=xyz", "--password", "p/w@x", "--label", "a b",
            "--image", "u:pw@reg.example/img", "password=hunter2", "Authorization: Bearer tok123456"]
    line = redact_argv(argv)
    for secret in ("abc", "xyz", "p/w@x", "pw@", "hunter2", "tok123456"):
        assert secret not in line
    assert "--label 'a b'" in line and "reg.example/img" in line
    assert redact_command_line(line) == line
    # a recorded line of an older collector is redacted when read again
    old = "collector run --token xyz --image https://u:pw@reg.example/img"
    assert redact_command_line(old) == "collector run --token '[redacted]' --image 'https://u:[redacted]@reg.example/img'"
    assert redact_entry("command", "argv", old) == redact_command_line(old)


def test_secret_named_variables_are_dropped_and_values_redacted() -> None:
    environ = {
        "HTTPS_PROXY": "http://alice:pa/ss@proxy.example:3128",
        "http_proxy": "http://alice:p@ss@proxy.example:3128",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility,https://u:pw9@caps.example/x",
        "TORCH_HUB_HEADERS": "Authorization: Bearer abc.def.ghi",
        "NCCL_EXTRA": f"{AWS_ID}",
        "HF_TOKEN": HF,
        "CUDA_VISIBLE_DEVICES": "0,1",
    }
    names = dict(fp.collect_environment_variables(environ))
    assert "HF_TOKEN" not in names
    assert names["HTTPS_PROXY"] == names["http_proxy"] == "http://alice:[redacted]@proxy.example:3128"
    assert names["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility,https://u:[redacted]@caps.example/x"
    assert names["TORCH_HUB_HEADERS"] == "Authorization: Bearer [redacted]"
    assert names["NCCL_EXTRA"] == REDACTED
    assert names["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert redact_entry("env", "SOME_TOKEN", "anything") == REDACTED  # recorded by a collector without the filter


def test_the_fingerprint_redacts_the_image_the_command_line_and_container_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVIDIA_DRIVER_CAPABILITIES", "compute,https://u:capsecret@caps.example/x")
    monkeypatch.setenv("ALL_PROXY", "socks5://bob:allsecret@10.0.0.1:1080")
    monkeypatch.setenv("TORCH_HOME", "/opt/torch")
    entries = fp.collect_fingerprint(image="alice:imgsecret@registry.example/img:1",
                                     argv=["collector", "run", "--token=argsecret", "password=pwsecret"])
    values = {(e.section, e.key): e.value for e in entries}
    text = repr(values)
    for secret in ("capsecret", "allsecret", "imgsecret", "argsecret", "pwsecret"):
        assert secret not in text
    assert values[("container", "image")] == "alice:[redacted]@registry.example/img:1"
    assert values[("container", "nvidia_capabilities")] == "compute,https://u:[redacted]@caps.example/x"
    assert values[("env", "TORCH_HOME")] == "/opt/torch"


def test_run_entries_are_redacted_where_recorded() -> None:
    from collector.runner import environment_rows
    from runformat.schema import EnvironmentEntry

    class _Planned:
        fingerprint = [EnvironmentEntry("container", "image", "u:pw@reg.example/img")]
        run_entries = {"python": "/venv/bin/python", "label_given": f"stack {GITHUB}"}

    rows = {(e.section, e.key): e.value for e in environment_rows(_Planned(), "running")}  # type: ignore[arg-type]
    assert rows[("container", "image")] == "u:[redacted]@reg.example/img"
    assert rows[("run", "label_given")] == "stack [redacted]"
    assert rows[("run", "python")] == "/venv/bin/python"


def test_the_reporter_redacts_runs_recorded_before_redaction(tmp_path) -> None:
    import numpy as np

    from reporter.data.load import load_archive
    from test_reporter_support import lognormal_processes, run_id, write_run

    secrets = {
        ("env", "HTTPS_PROXY"): "http://alice:pa/ss@proxy.example:3128",
        ("env", "GITHUB_TOKEN"): GITHUB,  # an old collector without the name filter
        ("container", "image"): "alice:imgsecret@registry.example/img:1",
        ("container", "nvidia_capabilities"): "compute,https://u:capsecret@caps.example/x",
        ("command", "argv"): "collector run --token argsecret",
    }
    rng = np.random.default_rng(1)
    write_run(tmp_path / "runs", "old", {"mm[n=64]": lognormal_processes(rng, 3, 4, 1e-3, 0.02, 0.0)},
              run_id=run_id(0, "000000"), environment=secrets)
    archive = load_archive(tmp_path / "runs")
    env = {(r.section, r.key): r.value for r in archive.environment.itertuples()}
    text = repr(env) + repr(archive.runs.to_dict("records"))
    for secret in ("pa/ss", GITHUB, "imgsecret", "capsecret", "argsecret"):
        assert secret not in text
    assert env[("env", "HTTPS_PROXY")] == "http://alice:[redacted]@proxy.example:3128"
    assert env[("container", "image")] == "alice:[redacted]@registry.example/img:1"
    assert archive.runs["image"].iloc[0] == "alice:[redacted]@registry.example/img:1"


_password = st.text(st.characters(codec="ascii", categories=("L", "N", "P", "S")), min_size=1, max_size=30).filter(
    lambda p: not any(c in p for c in " \"'<>") and p not in ("redacted", "[redacted]")
)


@settings(max_examples=300, deadline=None)
@given(user=st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True), password=_password,
       scheme=st.sampled_from(["http", "https", "socks5h", "ftp"]), host=st.from_regex(r"[a-z]{1,10}\.example(:[0-9]{2,5})?", fullmatch=True))
def test_no_url_password_survives(user: str, password: str, scheme: str, host: str) -> None:
    url = f"{scheme}://{user}:{password}@{host}/path"
    out = redact(url)
    assert out == f"{scheme}://{user}:[redacted]@{host}/path"
    assert redact(out) == out


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
    assert redact_image(redact_image(text)) == redact_image(text)
