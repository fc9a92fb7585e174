"""Exercise bundles: malformed ones are refused with a clear reason; every real one checks out."""

import shutil
from pathlib import Path

import pytest

from grader import catalog
from grader.catalog.check import check, format_check

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "exercises"
BASICS = EXERCISES / "autograd-basics"


@pytest.mark.parametrize("exercise", catalog.all_bundles(EXERCISES), ids=lambda e: e.slug)
def test_every_exercise_in_the_catalogue_checks_out(exercise):
    rows = check(exercise)
    assert all(r.ok for r in rows), "\n" + format_check(rows)


def test_check_flags_a_mutant_that_passes_a_test_it_declares_failing(tmp_path):
    bundle = shutil.copytree(BASICS, tmp_path / "autograd-basics")
    manifest = bundle / "mutants" / "mutants.toml"
    manifest.write_text(manifest.read_text().replace(  # hand_computed's declaration only
        '[hand_computed]\nfails = ["test_gradient_is_left_in_x_grad", "test_keeps_dtype_float64"]',
        '[hand_computed]\nfails = ["test_returns_gradient_of_2xtx"]'))
    rows = check(catalog.load(bundle))
    bad = [r for r in rows if not r.ok]
    assert [r.subject for r in bad] == ["mutant:hand_computed"]
    assert "violated" in format_check(rows)


def make_bundle(tmp_path, toml):
    bundle = shutil.copytree(BASICS, tmp_path / "bundle")
    (bundle / "exercise.toml").write_text(toml)
    return bundle


@pytest.mark.parametrize("toml, words", [
    ('version = 1\ntitle = {en = "t"}\nfunctions = ["f"]\n', "missing required key 'slug'"),
    ('slug = "Bad Slug"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["f"]\n', "lowercase"),
    ('slug = "s"\nversion = 0\ntitle = {en = "t"}\nfunctions = ["f"]\n', "positive"),
    ('slug = "s"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["f"]\ndevice = "tpu"\n', "device must be one of"),
    ('slug = "s"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["not a name"]\n', "Python names"),
    ('slug = "s"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["f"]\n[limits]\nwall = 3\n', "unknown limits"),
    ('slug = "s"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["f"]\n[limits]\nmemory_mb = -1\n', "positive"),
    ('slug = "s"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["f"]\n[sandbox]\nblock = ["x; rm"]\n', "dotted"),
    ("slug = [", "not valid TOML"),
])
def test_malformed_exercise_toml_is_refused_with_the_reason(tmp_path, toml, words):
    with pytest.raises(catalog.CatalogError, match=words):
        catalog.load(make_bundle(tmp_path, toml))


def test_a_bundle_without_tests_or_solution_is_refused(tmp_path):
    bundle = shutil.copytree(BASICS, tmp_path / "bundle")
    (bundle / "solution.py").unlink()
    with pytest.raises(catalog.CatalogError, match="missing solution.py"):
        catalog.load(bundle)
    shutil.rmtree(bundle / "tests")
    (bundle / "solution.py").write_text("")
    with pytest.raises(catalog.CatalogError, match="tests/"):
        catalog.load(bundle)


def test_an_unknown_slug_lists_the_known_ones():
    with pytest.raises(catalog.CatalogError, match="autograd-basics"):
        catalog.find("no-such-exercise", EXERCISES)


def test_statements_come_in_english_and_korean():
    exercise = catalog.find("autograd-basics", EXERCISES)
    assert exercise.statement("en").startswith("# Your first gradient")
    assert "기울기" in exercise.statement("ko")
    assert exercise.statement("fr") == exercise.statement("en")


def test_grader_new_makes_an_annotated_bundle_that_checks_out(tmp_path):
    from click.testing import CliRunner

    from grader.cli import main

    made = CliRunner().invoke(main, ["new", "my-first", "--into", str(tmp_path)])
    assert made.exit_code == 0, made.output
    bundle = catalog.load(tmp_path / "my-first")
    assert bundle.slug == "my-first" and (bundle.path / "probes.py").is_file()
    assert "my-first" in (bundle.path / "MISCONCEPTIONS.md").read_text(encoding="utf-8")
    rows = check(bundle)
    assert all(r.ok for r in rows), "\n" + format_check(rows)
    assert any(r.subject.startswith("row:") for r in rows)  # its misconception table is checked too
    again = CliRunner().invoke(main, ["new", "my-first", "--into", str(tmp_path)])
    assert again.exit_code == 1 and "exists already" in again.output
    assert CliRunner().invoke(main, ["new", "Not A Slug", "--into", str(tmp_path)]).exit_code == 1
