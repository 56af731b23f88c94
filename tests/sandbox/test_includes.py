"""The include screen: a kernel reads no host file; it may include the shipped CUDA headers and its own."""

import os
import threading

import pytest

from sandbox import compile_source
from sandbox import compiler as compiler_module
from sandbox.compile_pool import shared_pool
from sandbox.compile_worker import NvrtcJob
from sandbox.includes import Refusal, screen
from sandbox.limits import CompileLimits
from tests.paths import KERNELS

pytest.importorskip("cuda.bindings.nvrtc")

CHEATS = ["include_host_file.cu", "include_parent_dir.cu", "include_stdin.cu", "include_computed.cu",
          "include_spliced.cu", "include_comment_trick.cu", "include_digraph.cu", "include_probe.cu"]
KERNEL = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] = VALUE; }\n'


@pytest.fixture
def no_nvrtc(monkeypatch):
    """Fail the test if anything reaches the compile workers."""
    monkeypatch.setattr(compiler_module, "shared_pool", lambda: pytest.fail("the source reached NVRTC"))


@pytest.fixture
def secret_file(tmp_path):
    """A host file outside the kernel folder, with a text that must never appear in a log."""
    path = tmp_path / "secret.txt"
    path.write_text("TOP_SECRET_HOST_LINE\n")
    (tmp_path / "task").mkdir()
    return path


@pytest.mark.parametrize("cheat", CHEATS)
def test_cheat_kernels_are_refused_before_nvrtc_runs(cheat, no_nvrtc):
    result = compile_source((KERNELS / cheat).read_text(), ["layernorm"], filename=cheat)
    assert not result.ok and result.limit == ""
    assert result.message.startswith(f"{cheat}(") and "refused" in result.message  # file(line): what and why
    assert "kernels may #include the CUDA headers kagent ships" in result.log  # and what is allowed
    assert "ptxas" not in result.log and "catastrophic" not in result.log


@pytest.mark.parametrize("cheat", CHEATS)
def test_no_cheat_puts_a_host_file_in_the_log(cheat, secret_file, no_nvrtc):
    source = (KERNELS / cheat).read_text().replace("/etc/hostname", str(secret_file))
    source = source.replace("../../../../../../../../etc/hostname", "../secret.txt")
    result = compile_source(source, ["layernorm"], include_roots=[secret_file.parent / "task"])
    assert not result.ok and "TOP_SECRET_HOST_LINE" not in result.log


def test_unscreened_nvrtc_would_quote_the_host_file(secret_file):
    """The control: handed straight to NVRTC, the include does leak, so the screen is what stops it."""
    job = NvrtcJob(f'#include "{secret_file}"\n', "kernel.cu", (), ("--std=c++17",), (), 0)
    (reply,) = shared_pool().run([job], CompileLimits())
    assert "TOP_SECRET_HOST_LINE" in reply.log


def test_every_refused_line_is_listed(no_nvrtc):
    result = compile_source((KERNELS / "include_comment_trick.cu").read_text(), ["layernorm"], filename="t.cu")
    assert [line.split(":")[0] for line in result.log.splitlines()[:3]] == ["t.cu(5)", "t.cu(6)", "t.cu(9)"]


def test_a_symlink_out_of_the_kernel_folder_is_refused(secret_file, no_nvrtc):
    folder = secret_file.parent / "task"
    (folder / "common.h").symlink_to(secret_file)
    result = compile_source('#include "common.h"\n' + KERNEL, ["k"], include_roots=[folder])
    assert not result.ok and "outside the kernel folder" in result.log
    assert "TOP_SECRET_HOST_LINE" not in result.log


def test_a_fifo_beside_the_kernel_is_refused_without_blocking(tmp_path, no_nvrtc):
    os.mkfifo(tmp_path / "pipe.h")
    done: list = []
    thread = threading.Thread(target=lambda: done.append(
        compile_source('#include "pipe.h"\n' + KERNEL, ["k"], include_roots=[tmp_path])), daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert done and not done[0].ok and "not a regular file" in done[0].log


def test_knob_values_cannot_probe_host_files(no_nvrtc):
    result = compile_source("#if PROBE\n#endif\n" + KERNEL, ["k"], {"PROBE": '__has_include("/etc/passwd")'})
    assert not result.ok and "knob definitions(1)" in result.log and "absolute path" in result.log


def test_shipped_and_local_headers_compile(tmp_path):
    (tmp_path / "common.h").write_text('#pragma once\n#include "more.h"\n#define VALUE (TWO * a[0])\n')
    (tmp_path / "more.h").write_text("#include <cuda_fp16.h>\n#define TWO 2.f\n")
    source = '#include <mma.h>\n#include <cuda_bf16.h>\n#include "common.h"\n' + KERNEL
    result = compile_source(source, ["k"], include_roots=[tmp_path])
    assert result.ok, result.log


def test_an_error_in_a_local_header_names_the_header(tmp_path):
    (tmp_path / "common.h").write_text("#define VALUE 1.f\nint broken = nope;\n")
    result = compile_source('#include "common.h"\n' + KERNEL, ["k"], include_roots=[tmp_path])
    assert not result.ok and 'common.h(2): error: identifier "nope" is undefined' in result.log


def test_a_safe_name_found_nowhere_is_left_to_nvrtc(tmp_path):
    """No file to read, so no leak: an inactive branch compiles and an active one fails as NVRTC says."""
    guarded = "#ifndef __CUDACC_RTC__\n#include <cstdio>\n#endif\n#define VALUE 1.f\n" + KERNEL
    assert compile_source(guarded, ["k"], include_roots=[tmp_path]).ok
    result = compile_source('#include "absent.h"\n' + KERNEL, ["k"], include_roots=[tmp_path])
    assert not result.ok and 'cannot open source file "absent.h"' in result.log


def test_editing_an_included_header_changes_the_cache_key(tmp_path):
    header = tmp_path / "common.h"
    header.write_text("#define VALUE 1.f\n")
    source = '#include "common.h"\n' + KERNEL
    first = compile_source(source, ["k"], include_roots=[tmp_path])
    again = compile_source(source, ["k"], include_roots=[tmp_path])
    header.write_text("#define VALUE nope\n")
    edited = compile_source(source, ["k"], include_roots=[tmp_path])
    assert first.ok and again.cache_hit and again.key == first.key
    assert not edited.cache_hit and edited.key != first.key and not edited.ok and '"nope"' in edited.log


def test_a_source_too_large_with_its_headers_is_refused(tmp_path):
    (tmp_path / "big.h").write_text("// padding\n" * 200)  # 2.2 KB
    limits = CompileLimits(max_source_kb=2)
    assert compile_source("#define VALUE 1.f\n" + KERNEL, ["k"], include_roots=[tmp_path], limits=limits).ok
    result = compile_source('#include "big.h"\n#define VALUE 1.f\n' + KERNEL, ["k"], include_roots=[tmp_path],
                            limits=limits)
    assert not result.ok and result.limit == "source_size"
    assert "over the limit of 2 KiB" in result.log and "KAGENT_MAX_SOURCE_KB" in result.log


def test_a_shipped_header_with_a_computed_include_is_refused(tmp_path):
    """A CUDA header that includes a macro's value would let the kernel choose the file (thrust does)."""
    (tmp_path / "vector.h").write_text("#include __SYSTEM_VECTOR_HEADER\n")
    found = screen('#define __SYSTEM_VECTOR_HEADER "/etc/hostname"\n#include <vector.h>\n', "k.cu", [],
                   [str(tmp_path)], 1 << 20)
    assert isinstance(found, Refusal) and "includes a computed name (__SYSTEM_VECTOR_HEADER" in found.message
