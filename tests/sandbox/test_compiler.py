"""Real NVRTC compiles (no GPU needed): errors with line numbers, resource figures, the cache."""

import warnings
from pathlib import Path

import pytest

from sandbox import compile_source
from sandbox.compiler import CompileJob, compile_many
from sandbox.resources import parse_resources

SMEM_KERNEL = """extern "C" __global__ void k(float* a, int n) {
    __shared__ float tile[256];
    int i = threadIdx.x;
    tile[i] = a[i];
    __syncthreads();
    a[i] = tile[255 - i] * SCALE + INFINITY * 0.f;
}
"""

pytest.importorskip("cuda.bindings.nvrtc")


def test_compile_reports_registers_and_shared_memory():
    result = compile_source(SMEM_KERNEL, ["k"], {"SCALE": "2"}, arch="sm_90")
    assert result.ok, result.log
    (usage,) = result.resources
    assert usage.name == "k" and usage.static_smem_bytes == 1024 and 0 < usage.registers <= 255
    assert result.cubin_path and open(result.cubin_path, "rb").read(4) == b"\x7fELF"


def test_compile_error_keeps_the_users_line_number():
    broken = SMEM_KERNEL.replace("tile[i] = a[i];", "tile[i] = a[j];")
    result = compile_source(broken, ["k"], {"SCALE": "2"}, arch="sm_90", filename="mine.cu")
    assert not result.ok
    assert 'mine.cu(4): error: identifier "j" is undefined' in result.log


def test_missing_knob_macro_is_a_compile_error():
    result = compile_source(SMEM_KERNEL, ["k"], {}, arch="sm_90")
    assert not result.ok and '"SCALE" is undefined' in result.log


def test_entry_that_does_not_exist_fails_to_compile():
    result = compile_source(SMEM_KERNEL, ["nope"], {"SCALE": "1"}, arch="sm_90")
    assert not result.ok and "nope" in result.log


def test_spills_and_stack_are_parsed():
    source = """extern "C" __global__ void big(float* a) {
        float acc[24];
        for (int i = 0; i < 24; i++) acc[i] = a[i * blockDim.x + threadIdx.x];
        float s = 0;
        for (int j = 0; j < 24; j++)
            for (int i = 0; i < 24; i++) s += acc[i] * acc[(i + j) % 24];
        a[threadIdx.x] = s;
    }"""
    free = compile_source(source, ["big"], arch="sm_90").resources[0]
    squeezed = compile_source(source, ["big"], arch="sm_90", flags=["-maxrregcount=16"]).resources[0]
    assert free.registers > 32 and free.spill_stores == 0
    assert squeezed.registers <= 24 and squeezed.spill_stores > 0 and squeezed.spill_loads > 0
    assert squeezed.stack_bytes > free.stack_bytes


def test_cache_hit_on_identical_input_and_miss_on_any_change():
    first = compile_source(SMEM_KERNEL, ["k"], {"SCALE": "3"}, arch="sm_90")
    again = compile_source(SMEM_KERNEL, ["k"], {"SCALE": "3"}, arch="sm_90")
    assert not first.cache_hit and again.cache_hit and again.key == first.key
    assert again.resources == first.resources
    for changed in (
        dict(knobs={"SCALE": "4"}),
        dict(flags=["-use_fast_math"]),
        dict(arch="sm_80"),
    ):
        args = dict(source=SMEM_KERNEL, entries=["k"], knobs={"SCALE": "3"}, arch="sm_90") | changed
        assert compile_source(**args).key != first.key


def test_failed_compiles_are_cached_too():
    broken = "extern \"C\" __global__ void k() { oops; }"
    assert not compile_source(broken, ["k"], arch="sm_90").cache_hit
    assert compile_source(broken, ["k"], arch="sm_90").cache_hit


def test_the_same_source_under_another_name_gets_a_log_that_names_it():
    broken = "extern \"C\" __global__ void k() { renamed_oops; }"
    first = compile_source(broken, ["k"], arch="sm_90", filename="llm1.cu")
    cached = compile_source(broken, ["k"], arch="sm_90", filename="llm3.cu")
    assert cached.cache_hit and cached.key == first.key
    assert "llm1.cu(1): error" in first.log and "llm3.cu(1): error" in cached.log and "llm1.cu" not in cached.log
    together = compile_many([CompileJob("extern \"C\" __global__ void k() { both_oops; }", ["k"], filename=name)
                             for name in ("a.cu", "b.cu")])
    assert [r.log.splitlines()[0].split("(")[0] for r in together] == ["a.cu", "b.cu"]


def test_disallowed_flag_is_refused():
    result = compile_source(SMEM_KERNEL, ["k"], {"SCALE": "1"}, flags=["-I/etc"], arch="sm_90")
    assert not result.ok and "not allowed" in result.log


def test_prelude_gives_math_constants_and_headers_are_found():
    source = """#include <cuda_fp16.h>
    #include <cuda_bf16.h>
    __device__ float lowest = -FLT_MAX;
    extern "C" __global__ void k(__half* h, __nv_bfloat16* b) {
        h[0] = __float2half(M_PI); b[0] = __float2bfloat16(INFINITY + INT_MAX + NAN + lowest);
    }"""
    result = compile_source(source, ["k"], arch="sm_90")
    assert result.ok, result.log


def test_parse_resources_of_mangled_names():
    log = ("ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'\n"
           "ptxas info    : Function properties for _Z1kPf\n"
           "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem\n")
    (usage,) = parse_resources(log, {"k": "_Z1kPf"})
    assert (usage.name, usage.registers, usage.static_smem_bytes) == ("k", 40, 2048)
    assert (usage.stack_bytes, usage.spill_stores, usage.spill_loads) == (8, 4, 12)


def test_register_counts_from_the_cubin_match_ptxas():
    from sandbox.cubin import kernel_registers

    result = compile_source(SMEM_KERNEL, ["k"], {"SCALE": "2"}, arch="sm_90", use_cache=False)
    with open(result.cubin_path, "rb") as f:
        assert kernel_registers(f.read()) == {"k": result.resources[0].registers}
    assert "Used %d registers" % result.resources[0].registers in result.log


BIG_STATIC_SMEM = """extern "C" __global__ void k(float* a) {
    __shared__ float tile[16384];
    tile[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    a[threadIdx.x] = tile[1023 - threadIdx.x];
}"""


def test_a_ptxas_error_message_has_no_nul_byte():
    """NVRTC ends each part of its log with a NUL, so with -Xptxas=-v the ptxas error line began with one."""
    result = compile_source(BIG_STATIC_SMEM, ["k"], arch="sm_90")
    assert not result.ok and "\x00" not in result.log
    assert result.message.startswith("ptxas error   : Entry function 'k' uses too much shared data")


def test_too_much_static_shared_memory_is_explained():
    message = compile_source(BIG_STATIC_SMEM, ["k"], arch="sm_90").message
    assert "(0x10000 bytes, 0xc000 max)" in message and "65536 bytes of static __shared__ memory" in message
    assert "48 KiB" in message and "extern __shared__" in message and "// @kagent smem: BYTES" in message
    assert "227 KiB per block on sm_90" in message
    assert "163 KiB per block on sm_80" in compile_source(BIG_STATIC_SMEM, ["k"], arch="sm_80").message


def test_a_log_cached_before_the_fix_is_cleaned_when_read():
    import json

    from sandbox import compile_cache

    first = compile_source(BIG_STATIC_SMEM.replace("16384", "16385"), ["k"], arch="sm_90")
    record = json.loads(compile_cache.load(first.key)[0])
    record["log"] = "\x00ptxas error   : Entry function 'k' uses too much shared data (0x10004 bytes, 0xc000 max)\n"
    compile_cache.store_record(first.key, json.dumps(record))
    again = compile_source(BIG_STATIC_SMEM.replace("16384", "16385"), ["k"], arch="sm_90")
    assert again.cache_hit and again.message.startswith("ptxas error") and "\x00" not in again.log
    assert again.message == first.message and again.message.count("static __shared__ memory") == 1


def test_an_architecture_nvrtc_does_not_know_is_a_clear_error():
    from sandbox import ToolchainError, UnsupportedArch, check_arch, target_arch

    for arch in ("sm_1000", "sm_20", "banana"):
        with pytest.raises(UnsupportedArch, match=r"supported: sm_\d+.*sm_90"):
            check_arch(arch)
    assert issubclass(UnsupportedArch, ToolchainError) and issubclass(UnsupportedArch, ValueError)
    assert check_arch("90") == "sm_90" and check_arch("sm_90a") == "sm_90a"
    with pytest.raises(UnsupportedArch):
        target_arch("sm_1000")
    result = compile_source(SMEM_KERNEL, ["k"], {"SCALE": "1"}, arch="sm_1000")
    assert not result.ok and "sm_1000" in result.message and "supported: " in result.message


def test_an_unwritable_cache_folder_compiles_without_a_cache(tmp_path, monkeypatch):
    from sandbox import compile_cache

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("KAGENT_CACHE_DIR", str(blocker))
    monkeypatch.setattr(compile_cache, "_warned", set())
    with pytest.warns(RuntimeWarning, match="cannot be written.*compiling without a cache"):
        first = compile_source(SMEM_KERNEL, ["k"], {"SCALE": "5"}, arch="sm_90")
    assert first.ok and Path(first.cubin_path).read_bytes()[:4] == b"\x7fELF"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once, not at every compile
        second = compile_source(SMEM_KERNEL, ["k"], {"SCALE": "5"}, arch="sm_90")
    assert second.ok and not second.cache_hit


def test_the_compile_log_is_redacted(monkeypatch):
    import importlib

    from sandbox import register_secret

    monkeypatch.setattr(importlib.import_module("sandbox.redact"), "_registered", set())  # kept to this test
    monkeypatch.setenv("KAGENT_TEST_API_KEY", "sk-env-0123456789abcdef")
    register_secret("registered-secret-9876543210")
    source = ('extern "C" __global__ void k(float* a) {\n'
              '    const char* s = "sk-env-0123456789abcdef registered-secret-9876543210"; a[0] = nope;\n}')
    result = compile_source(source, ["k"], arch="sm_90")
    assert not result.ok and '"nope" is undefined' in result.log
    assert "sk-env-0123456789abcdef" not in result.log and "registered-secret" not in result.log
    assert "[redacted]" in result.log
    assert "registered-secret" not in compile_source(source, ["k"], arch="sm_90").log  # from the cache too


def test_only_cxx17_and_cxx20_are_allowed():
    """The include screen lexes C++17; an older standard would honour trigraphs and lack raw strings."""
    assert compile_source(SMEM_KERNEL, ["k"], {"SCALE": "1"}, flags=["-std=c++20"], arch="sm_90").ok
    result = compile_source(SMEM_KERNEL, ["k"], {"SCALE": "1"}, flags=["-std=c++14"], arch="sm_90")
    assert not result.ok and "not allowed" in result.log
