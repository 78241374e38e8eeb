"""The disk cache trusts only what it wrote itself (issue 14, items 3-5).

An entry is bound to a per-user secret (an HMAC key kept 0600 outside the cache), so a planted or
rewritten entry is a miss; a cache directory or entry that someone else owns or can write is
refused with a warning; only the file names the cache writes are read; and an entry whose
record has the wrong shape (even one carrying a valid MAC: an older or buggy writer) is a miss
that the next compile rewrites."""

import hashlib
import json
import os
import stat

import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab.compiler import cache as disk
from tests.runtime import test_cache  # noqa: F401  (registers the "stamp" backend: disk-cached, no GPU)




@kl.jit
def double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNELLAB_CACHE_KEY_FILE", str(tmp_path / "config" / "cache-key"))
    monkeypatch.delenv("KERNELLAB_ALWAYS_COMPILE", raising=False)
    return tmp_path / "cache"


def compile_double():
    return kl.compile(double, signature="*fp32,i32", constexprs={"BLOCK": 32}, target="stamp")


def entry_dir(ck) -> str:
    return disk.default_cache().entry_path(ck.metadata["cache_key"])


def assert_miss_then_rewritten(genuine):
    again = compile_double()
    assert again.metadata["cache_hit"] is False
    assert again.asm["stamp"] == genuine.asm["stamp"]
    third = compile_double()
    assert third.metadata["cache_hit"] is True and third.asm["stamp"] == genuine.asm["stamp"]
    assert third.passes and [p.name for p in third.passes] == [p.name for p in genuine.passes]


def forge(path, record):
    """Rewrite an entry's record as an attacker can: without the user's secret."""
    with open(os.path.join(path, "metadata.json"), "w") as f:
        f.write(json.dumps(record))


# -- item 3: entries are bound to a per-user secret ---------------------------------------


@pytest.mark.parametrize("artifact", ["stamp.txt", "ttir.ttir"])
def test_a_rewritten_artifact_with_a_matching_digest_is_a_miss(cache_dir, artifact):
    genuine = compile_double()
    path = entry_dir(genuine)
    evil = b"planted code"
    with open(os.path.join(path, artifact), "wb") as f:
        f.write(evil)
    stage = {"stamp.txt": "stamp", "ttir.ttir": "ttir"}[artifact]
    record = {"format": disk.FORMAT, "key": genuine.metadata["cache_key"], "metadata": dict(genuine.metadata),
              "files": {stage: [artifact, "text", len(evil), hashlib.sha256(evil).hexdigest()]}}  # fmt: skip
    forge(path, record)
    assert_miss_then_rewritten(genuine)


def test_an_entry_signed_with_another_secret_is_a_miss(cache_dir, tmp_path, monkeypatch):
    compile_double()  # the entry, signed with this secret
    monkeypatch.setenv("KERNELLAB_CACHE_KEY_FILE", str(tmp_path / "other" / "cache-key"))
    assert compile_double().metadata["cache_hit"] is False


def test_the_secret_is_private_and_outside_the_cache(cache_dir, tmp_path):
    compile_double()
    key_file = tmp_path / "config" / "cache-key"
    assert key_file.exists() and not str(key_file).startswith(str(cache_dir))
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(key_file.read_bytes()) >= 32


def test_a_secret_others_can_read_is_refused(cache_dir, tmp_path):
    compile_double()
    os.chmod(tmp_path / "config" / "cache-key", 0o644)
    with pytest.warns(disk.CacheWarning, match="chmod 600"):
        ck = compile_double()
    assert ck.metadata["cache_hit"] is False


def test_directories_are_private(cache_dir):
    ck = compile_double()
    path = entry_dir(ck)
    for directory in (cache_dir, os.path.dirname(path), path):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700, directory
    for name in os.listdir(path):
        assert stat.S_IMODE(os.stat(os.path.join(path, name)).st_mode) == 0o600, name


def test_a_cache_directory_others_can_write_is_refused(cache_dir):
    compile_double()
    os.chmod(cache_dir, 0o777)
    with pytest.warns(disk.CacheWarning, match="writable by others") as warned:
        ck = compile_double()
    assert ck.metadata["cache_hit"] is False
    assert "KERNELLAB_CACHE_DIR" in str(warned[0].message) and "chmod 700" in str(warned[0].message)


def test_a_cache_directory_owned_by_another_user_is_refused(cache_dir, monkeypatch):
    compile_double()
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)
    with pytest.warns(disk.CacheWarning, match="owned by"):
        ck = compile_double()
    assert ck.metadata["cache_hit"] is False


def test_an_entry_others_can_write_is_refused(cache_dir):
    genuine = compile_double()
    os.chmod(entry_dir(genuine), 0o777)
    with pytest.warns(disk.CacheWarning, match="writable by others"):
        assert compile_double().metadata["cache_hit"] is False


# -- items 4 and 5: only the cache's own names, the whole entry validated ------------------


def damage_record(record, damage, outside):
    if damage == "traversal_stage_file":
        data = outside.read_bytes()
        record["files"]["stamp"] = ["../../../" + outside.name, "text", len(data), hashlib.sha256(data).hexdigest()]
    elif damage == "traversal_passes_file":
        record["passes_file"] = "../../../" + outside.name
    elif damage == "absolute_name":
        data = outside.read_bytes()
        record["files"]["stamp"] = [str(outside), "text", len(data), hashlib.sha256(data).hexdigest()]
    elif damage == "record_is_a_list":
        return [record]
    elif damage == "files_null":
        record["files"] = None
    elif damage == "files_wrong_shape":
        record["files"]["stamp"] = ["stamp.txt", "text"]
    elif damage == "missing_name":
        del record["metadata"]["name"]
    elif damage == "missing_option":
        del record["metadata"]["num_warps"]
    elif damage == "wrong_type":
        record["metadata"]["num_warps"] = "four"
    elif damage == "source_maps_malformed":
        record["metadata"]["source_maps"] = {"ttir": [[1, 2, 3]]}
    elif damage == "source_maps_null_pair":
        record["metadata"]["source_maps"] = {"ttir": [[1, None]]}
    elif damage == "metadata_null":
        record["metadata"] = None
    return record


RECORD_DAMAGE = [
    "traversal_stage_file", "traversal_passes_file", "absolute_name", "record_is_a_list", "files_null",
    "files_wrong_shape", "missing_name", "missing_option", "wrong_type", "source_maps_malformed",
    "source_maps_null_pair", "metadata_null",
]  # fmt: skip


@pytest.mark.parametrize("damage", RECORD_DAMAGE)
def test_a_signed_record_of_the_wrong_shape_is_a_miss_and_is_rewritten(cache_dir, tmp_path, damage):
    genuine = compile_double()
    cache = disk.default_cache()
    key = genuine.metadata["cache_key"]
    outside = tmp_path / "secret.txt"
    outside.write_text("not the cache's\n")
    record = damage_record(cache.read_record(key), damage, outside)
    cache.write_record(key, record)  # signed with the user's secret: only the shape is wrong
    assert cache.get(key) is None
    assert_miss_then_rewritten(genuine)


@pytest.mark.parametrize("content", [b"garbage{", b"[1, 2]", b'[{"name": 1}]', b""])
def test_a_corrupt_passes_file_is_a_miss_and_is_rewritten(cache_dir, content):
    genuine = compile_double()
    with open(os.path.join(entry_dir(genuine), "passes.json"), "wb") as f:
        f.write(content)
    assert_miss_then_rewritten(genuine)


def test_a_hit_restores_the_passes(cache_dir):
    genuine = compile_double()
    hit = compile_double()
    assert hit.metadata["cache_hit"] is True
    assert [(p.name, p.stage, p.changed) for p in hit.passes] == [(p.name, p.stage, p.changed) for p in genuine.passes]
