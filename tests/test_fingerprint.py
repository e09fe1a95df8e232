"""The fingerprint: what it records, and what it never records."""

from __future__ import annotations

from collector import fingerprint as fp


def test_fingerprint_has_the_keys_reports_rely_on():
    entries = fp.collect_fingerprint(image="pytorch:2.9-cu124", argv=["collector", "run"])
    keys = {(e.section, e.key): e.value for e in entries}
    import torch

    assert keys[("torch", "version")] == torch.__version__
    assert keys[("container", "image")] == "pytorch:2.9-cu124"
    assert keys[("command", "argv")] == "collector run"
    for key in [("python", "version"), ("os", "kernel"), ("cpu", "logical_cores"), ("memory", "total_bytes"),
                ("host", "hostname"), ("imagebench", "version"), ("cuda", "runtime"), ("torch", "config"),
                ("collect_env", "torch_version"), ("packages", "torch")]:
        assert key in keys, key
    assert all(isinstance(e.value, str) for e in entries)
    assert len({(e.section, e.key) for e in entries}) == len(entries)


def test_secret_named_variables_are_never_recorded():
    environ = {
        "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz012345",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "TORCH_API_KEY": "x",
        "NCCL_AUTH_TOKEN": "x",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "HOME": "/root",
    }
    names = dict(fp.collect_environment_variables(environ))
    assert names == {"CUDA_VISIBLE_DEVICES": "0,1"}


def test_credentials_in_allow_listed_values_are_redacted():
    environ = {
        "HTTPS_PROXY": "http://alice:s3cr3t-pa55@proxy.example:3128",
        "TORCH_EXTRA": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64:/usr/lib/x86_64-linux-gnu",
        "OMP_NUM_THREADS": "8",
    }
    names = dict(fp.collect_environment_variables(environ))
    assert names["HTTPS_PROXY"] == "http://alice:[redacted]@proxy.example:3128"
    assert "s3cr3t" not in repr(names)
    assert names["TORCH_EXTRA"] == "[redacted]"
    assert names["LD_LIBRARY_PATH"] == environ["LD_LIBRARY_PATH"]  # paths are not secrets
    assert names["OMP_NUM_THREADS"] == "8"


def test_command_line_hides_secret_flags():
    line = fp.redact_argv(["collector", "run", "--api-key", "abc", "--token=xyz", "--label", "a b"])
    assert "abc" not in line and "xyz" not in line
    assert "--label 'a b'" in line


def test_fingerprint_never_records_a_secret_from_the_real_environment(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_SuperSecretValue1234567890abcdef")
    monkeypatch.setenv("PYTORCH_SECRET", "nope")
    monkeypatch.setenv("HTTP_PROXY", "http://bob:hunter2@10.0.0.1:8080")
    entries = fp.collect_fingerprint(argv=["collector"])
    text = repr([e.__dict__ for e in entries])
    assert "SuperSecretValue" not in text and "nope" not in text and "hunter2" not in text


def test_device_ids_are_kept_and_url_query_secrets_are_redacted():
    environ = {
        "CUDA_VISIBLE_DEVICES": "GPU-8f4c2d3e-1a2b-3c4d-5e6f-7a8b9c0d1e2f,GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
        "NVIDIA_VISIBLE_DEVICES": "MIG-GPU-8f4c2d3e-1a2b-3c4d-5e6f-7a8b9c0d1e2f/1/0",
        "TORCH_HUB_URL": "https://hub.example/models?version=2&access_token=abc123&sig=Zz9",
        "HTTP_PROXY": "http://bob:hunter2@10.0.0.1:8080/?apikey=short",
        "TORCH_EXTRA": "GPU-notauuid-A1b2C3d4E5f6G7h8I9j0K1l2M3n4",  # a GPU- prefix does not excuse a token
    }
    names = dict(fp.collect_environment_variables(environ))
    assert names["CUDA_VISIBLE_DEVICES"] == environ["CUDA_VISIBLE_DEVICES"]
    assert names["NVIDIA_VISIBLE_DEVICES"] == environ["NVIDIA_VISIBLE_DEVICES"]
    assert names["TORCH_HUB_URL"] == "https://hub.example/models?version=2&access_token=[redacted]&sig=[redacted]"
    assert names["HTTP_PROXY"] == "http://bob:[redacted]@10.0.0.1:8080/?apikey=[redacted]"
    assert "hunter2" not in repr(names) and "abc123" not in repr(names)
    assert "A1b2C3d4E5f6G7h8I9j0K1l2M3n4" not in names["TORCH_EXTRA"]
