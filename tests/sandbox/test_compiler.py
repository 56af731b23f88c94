"""Real NVRTC compiles (no GPU needed): errors with line numbers, resource figures, the cache."""

import pytest

from sandbox import compile_source
from sandbox.compiler import parse_resources

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
