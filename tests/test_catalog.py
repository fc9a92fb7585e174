"""Exercise bundles: malformed ones are refused with a clear reason; every real one checks out."""

import os
import shutil
from pathlib import Path

import pytest

from grader import catalog
from grader.authoring.check import check
from grader.authoring.check_table import format_check

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "exercises"
BASICS = EXERCISES / "autograd-basics"


@pytest.mark.parametrize("exercise", catalog.all_bundles(EXERCISES), ids=lambda e: e.slug)
def test_every_exercise_in_the_catalogue_checks_out(exercise):
    # Its near misses are graded once, by tests/test_near_miss_hints.py, which reads their reports in Korean too.
    rows = check(exercise, near_misses=False)
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


LIMITED = 'slug = "s"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["f"]\n[limits]\n'


@pytest.mark.parametrize("toml, words", [
    ('version = 1\ntitle = {en = "t"}\nfunctions = ["f"]\n', "missing required key 'slug'"),
    ('slug = "Bad Slug"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["f"]\n', "lowercase"),
    ('slug = "s"\nversion = 0\ntitle = {en = "t"}\nfunctions = ["f"]\n', "positive"),
    ('slug = "s"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["f"]\ndevice = "tpu"\n', "device must be one of"),
    ('slug = "s"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["not a name"]\n', "Python names"),
    ('slug = "s"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["f"]\n[limits]\nwall = 3\n', "unknown limits"),
    ('slug = "s"\nversion = 1\ntitle = {en = "t"}\nfunctions = ["f"]\n[limits]\nmemory_mb = -1\n', "above 0"),
    # Limits that once crashed a grade, stalled a worker or had it copy gigabytes.
    (LIMITED + "memory_mb = 1.5\n", "memory_mb must be a whole number above 0 and at most 8192, not 1.5"),
    (LIMITED + "output_kb = 1e15\n", "output_kb must be a whole number"),
    (LIMITED + "submission_seconds = 1e300\n", "submission_seconds must be a number of seconds above 0 and at most 600"),
    (LIMITED + "call_seconds = nan\n", "call_seconds must be"),
    (LIMITED + "result_mb = 3000\n", "result_mb must be a whole number above 0 and at most 256"),
    (LIMITED + "processes = true\n", "processes must be a whole number"),
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


@pytest.mark.parametrize("name", ["README.md", "probes.py", "tests"])
def test_a_bundles_files_are_its_own_never_links_to_the_workers(tmp_path, name):
    # A link could name any file the worker can read: /proc/self/environ holds its secrets.
    bundle = shutil.copytree(BASICS, tmp_path / "bundle")
    target = bundle / name
    shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
    target.symlink_to("/proc/self/environ" if name != "tests" else EXERCISES / "detach" / "tests")
    with pytest.raises(catalog.CatalogError, match="link|cannot be read as a file of the bundle"):
        loaded = catalog.load(bundle)
        loaded.statement(), loaded.probes


def test_a_fifo_in_a_bundle_is_refused_without_blocking(tmp_path):
    bundle = shutil.copytree(BASICS, tmp_path / "bundle")
    os.mkfifo(bundle / "probes.py")
    with pytest.raises(catalog.CatalogError, match="probes.py: is not a regular file"):
        catalog.load(bundle).probes


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
