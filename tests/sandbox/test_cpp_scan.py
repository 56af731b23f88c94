"""The lexer behind the include screen finds every file a source names, however the directive is dressed."""

import pytest

from sandbox.cpp_scan import Inclusion, inclusions

HOST = "/etc/hostname"


@pytest.mark.parametrize("text, line", [
    (f'#include "{HOST}"\n', 1),
    (f'  #  include "{HOST}"\n', 1),
    (f'#inc\\\nlude "{HOST}"\n', 1),  # backslash-newline joins lines before directives are read
    (f'#inc\\\r\nlude "{HOST}"\r\n', 1),  # ... with Windows line ends too
    ('#include "/etc/host\\\nname"\n', 1),
    (f'# /* c */ include "{HOST}"\n', 1),
    (f'#/* a comment\nspanning lines */include "{HOST}"\n', 1),
    (f'int a; /* a comment\n*/ #include "{HOST}"\n', 2),  # EDG reads a directive after such a comment
    (f'#include /* c\n */ "{HOST}"\n', 1),
    (f'%:include "{HOST}"\n', 1),
    (f'\f#\vinclude "{HOST}"\n', 1),
    (f'#\\u0069nclude "{HOST}"\n', 1),  # a universal character name spelling `i`
    (f'??=include "{HOST}"\n', 1),  # a trigraph: only an older -std honours it; scanned anyway
    (f'// a comment ??/\n#include "{HOST}"\n', 2),  # without trigraphs the comment ends at the line end
    (f'const char* s = "/*";\n#include "{HOST}"\n', 2),  # "/*" in a string starts no comment
    (f"int n = 1'000; /* c */\n#include \"{HOST}\"\n", 2),  # a digit separator is no character literal
    (f'int FOOR"(\n#include "{HOST}"\n)";\n', 2),  # FOOR"( is no raw string: the directive is live
    (f'#include <a/*b>\n#include "{HOST}"\n', 2),  # no comment inside a header name
])
def test_a_dressed_up_include_is_found_on_its_line(text, line):
    assert Inclusion(line, "include", '"', HOST) in inclusions(text)


@pytest.mark.parametrize("text", [
    f'// #include "{HOST}"\n',
    f'/* #include "{HOST}" */\n',
    f'// a comment \\\n#include "{HOST}"\n',  # the splice makes the next line part of the comment
    f'const char* s = R"x(\n#include "{HOST}"\n)x";\n',  # inside a raw string
    f'const char* s = "#include \\"{HOST}\\"";\n',
])
def test_text_that_is_no_directive_is_not_taken_for_one(text):
    assert not [i for i in inclusions(text) if i.name == HOST]


def test_computed_includes_and_probes_are_reported_with_their_argument():
    found = inclusions('#define F "/etc/hostname"\n#include F\n#if __has_include(<cuda_fp16.h>)\n#endif\n'
                       '#define H __has_include\n#define G(x) __has_include(x)\n#include_next <x.h>\n')
    assert Inclusion(2, "include", "", "F") in found
    assert Inclusion(3, "__has_include", "<", "cuda_fp16.h") in found
    assert Inclusion(5, "__has_include", "", "") in found
    assert Inclusion(6, "__has_include", "", "x)") in found
    assert Inclusion(7, "include_next", "<", "x.h") in found


def test_line_numbers_count_the_lines_a_splice_joined():
    text = "#define A 1 \\\n  + 2\n#define B \\\n 3\n#include <mma.h>\n"
    assert inclusions(text) == [Inclusion(5, "include", "<", "mma.h")]
