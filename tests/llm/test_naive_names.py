"""The naive kernel a port prompt shows: its indices named as the slots' arguments where their bounds
say they are the same, its pointers into buffers written out; left alone wherever that is unclear."""

from __future__ import annotations

from kernel_agent.llm.naive_names import in_slot_names, with_indices_renamed, with_pointers_written_out
from kernel_agent.llm.porting import port_prompt_context
from kernel_agent.skeletons import library
from kernel_agent.skeletons.derive import derive
from kernel_agent.task import load_task
from tests.paths import ROOT

NAIVE = ROOT / "tasks" / "naive"


def shown(name: str, skeleton: str) -> tuple[str, str]:
    task = load_task(NAIVE / f"{name}.yaml")
    (source,) = (NAIVE / name).glob("*.cu")
    text = source.read_text()
    return text, in_slot_names(text, library()[skeleton], task, derive(library()[skeleton], task, {}).fills)


def test_an_epilogue_task_shows_its_output_store_in_the_epilogues_names():
    before, after = shown("matmul_scale_residual", "matmul")
    assert "y[(size_t)r * out_features + f] = z * scale + z;" in before
    assert "y[(size_t)row * out_features + col] = z * scale + z;" in after  # r < batch = M, f < out_features = N
    assert "const float z = acc + bias[col];" in after
    assert "acc += x[(size_t)row * in_features + i] * weight[(size_t)col * in_features + i];" in after
    assert "xr" not in after.split("{", 1)[1] and "wf" not in after.split("{", 1)[1]  # the pointers written out
    assert "// @kagent grid: ceil_div(out_features, 16), ceil_div(batch, 16)" in after


def test_a_row_loop_takes_the_column_argument_and_the_row_pointer_is_written_out():
    before, after = shown("matvec", "rowwise")
    assert "for (int k = 0; k < K; ++k) acc += ar[k] * x[k];" in before
    assert "for (int col = 0; col < K; ++col) acc += a[(size_t)row * K + col] * x[col];" in after
    assert "const float* ar" not in after


def test_comments_and_names_of_other_meaning_stay():
    task = load_task(NAIVE / "log_softmax.yaml")
    source = ("// c is a column\n"
              "extern \"C\" __global__ void log_softmax(const float* x, float* y, int rows, int cols) {\n"
              "    const int row = blockIdx.x;\n"
              "    for (int c = 0; c < cols; ++c) y[row * cols + c] = x[row * cols + c];  // each c\n"
              "}\n")
    given = {"ROWS": "rows", "COLS": "cols"}
    renamed = with_indices_renamed(source, library()["rowwise"], task, given)
    assert "for (int col = 0; col < cols; ++col) y[row * cols + col]" in renamed
    assert "// c is a column" in renamed and "// each c" in renamed
    # two locals with one bound: which is the column is not known
    two = source.replace("y[row * cols + c] = x[row * cols + c];",
                         "for (int j = 0; j < cols; ++j) y[row * cols + j] = x[row * cols + c];")
    assert with_indices_renamed(two, library()["rowwise"], task, given) == two
    # the argument's name is taken by another local: nothing renamed
    taken = source.replace("const int row = blockIdx.x;", "const int row = blockIdx.x; const int col = 0;")
    assert with_indices_renamed(taken, library()["rowwise"], task, given) == taken
    # a dim kagent does not fill (the model's own) bounds nothing
    assert with_indices_renamed(source, library()["rowwise"], task, {}) == source


def test_a_pointer_used_otherwise_than_by_indexing_stays():
    task = load_task(NAIVE / "matvec.yaml")
    source = ("    const float* ar = a + (size_t)row * K;\n"
              "    const float* end = ar + K;\n"
              "    acc += ar[k] * x[k];\n")
    assert with_pointers_written_out(source, task) == source
    indexed = "    const float* ar = a + (size_t)row * K;\n    acc += ar[0] + ar[k + 1];\n"
    assert with_pointers_written_out(indexed, task) == "    acc += a[(size_t)row * K] + a[(size_t)row * K + k + 1];\n"


def test_the_port_prompt_says_the_kernel_it_shows_was_renamed():
    task = load_task(NAIVE / "matvec.yaml")
    (source,) = (NAIVE / "matvec").glob("*.cu")
    view = port_prompt_context(task, source.read_text(), library()["rowwise"], [])
    assert view["naive_renamed"] and "acc += a[(size_t)row * K + col] * x[col];" in view["naive"]
    softplus = load_task(NAIVE / "softplus.yaml")
    (plain,) = (NAIVE / "softplus").glob("*.cu")
    assert not port_prompt_context(softplus, plain.read_text(), library()["elementwise"], [])["naive_renamed"]
