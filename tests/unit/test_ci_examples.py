"""The CI examples run the kaudit commands they say they run, against the sample layout.

``action.yml`` is run the way GitHub runs a composite action: each ``run`` step is
executed with ``bash --noprofile --norc -eo pipefail``, its ``env`` expressions filled
from the workflow's ``with:`` and the inputs' defaults, ``RUNNER_TEMP``,
``GITHUB_OUTPUT`` and ``GITHUB_ACTION_PATH`` set, and the first failing step ends the
run. Steps that need GitHub itself (setup-python, the pip install, the SARIF upload) are
not run; the test checks what they would be given. The GitLab job's ``kaudit`` lines and
the pre-commit hook (entry from ``.pre-commit-hooks.yaml``, args from the example
config) run as written. Everything is offline: policies, manifests, client configs.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import kaudit_on_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "ci"
SAMPLE = EXAMPLES / "sample-repo"
WORKFLOW = SAMPLE / ".github" / "workflows" / "kafka-topics.yml"
GITLAB = SAMPLE / ".gitlab-ci.yml"
PRE_COMMIT = SAMPLE / ".pre-commit-config.yaml"
BROKEN_MANIFEST = "kafka/topics/clicks.yaml"
BROKEN = """\
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaTopic
metadata:
  name: clicks
spec:
  partitions: 3
  replicas: 1
  config:
    min.insync.replicas: 1
"""
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    """A clean environment whose `kaudit` is this checkout's, run by this Python."""
    clean = kaudit_on_path(tmp_path)
    clean["KAUDIT_CONFIG"] = str(tmp_path / "no-config.yaml")
    clean.pop("CI", None)
    return clean


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A fresh copy of the sample repository (the CI job's checkout)."""
    return Path(shutil.copytree(SAMPLE, tmp_path / "repo"))


@pytest.fixture()
def broken_repo(repo: Path) -> Path:
    """The sample with one more topic that keeps a single copy of its records."""
    (repo / BROKEN_MANIFEST).write_text(BROKEN, encoding="utf-8")
    return repo


# -- a composite-action runner, just enough for action.yml ---------------------------------


@dataclass
class Step:
    """What happened to one step of the action."""

    name: str
    status: str  # ran | skipped | not-run (needs GitHub) | not-reached
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    given: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    """Runs action.yml's steps in ``workdir`` with ``inputs`` (a workflow step's ``with``)."""

    inputs: dict[str, str]
    workdir: Path
    env: dict[str, str]
    temp: Path
    action: dict[str, Any] = field(default_factory=lambda: load(ROOT / "action.yml"))
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)

    def input(self, name: str) -> str:
        declared = self.action["inputs"]
        assert name in declared, f"action.yml uses undeclared input {name!r}"
        return str(self.inputs.get(name, declared[name].get("default", "")))

    def evaluate(self, expression: str) -> str:
        """The few GitHub expressions action.yml may use; anything else fails the test."""
        m = re.fullmatch(r"(.+?)\s*==\s*'([^']*)'", expression)
        if m:
            return "true" if self.evaluate(m.group(1)) == m.group(2) else "false"
        m = re.fullmatch(r"inputs\.([\w-]+)", expression)
        if m:
            return self.input(m.group(1))
        m = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
        if m:
            return self.outputs.get(m.group(1), {}).get(m.group(2), "")
        raise AssertionError(f"action.yml uses an expression this test cannot run: {expression}")

    def fill(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.evaluate(m.group(1)), str(text))

    def run(self) -> dict[str, Step]:
        steps: dict[str, Step] = {}
        failed = False
        for raw in self.action["runs"]["steps"]:
            name = raw["name"]
            condition = raw.get("if")
            if failed:
                steps[name] = Step(name, "not-reached")
                continue
            if condition is not None:
                expr = EXPRESSION.fullmatch(condition.strip())
                if self.evaluate(expr.group(1) if expr else condition) != "true":
                    steps[name] = Step(name, "skipped")
                    continue
            given = {k: self.fill(v) for k, v in (raw.get("with") or {}).items()}
            if "uses" in raw:
                steps[name] = Step(name, "not-run", given=given)
                continue
            if "pip install" in raw["run"]:
                steps[name] = Step(name, "not-run",
                                   given={k: self.fill(v) for k, v in raw["env"].items()})
                steps[name].given["run"] = raw["run"]
                continue
            steps[name] = step = self.run_script(raw)
            failed = step.code != 0
        return steps

    def run_script(self, raw: dict[str, Any]) -> Step:
        assert raw["shell"] == "bash"
        output = self.temp / f"output-{len(self.outputs)}"
        output.write_text("")
        script = self.temp / "step.sh"
        script.write_text(raw["run"])
        env = dict(self.env, RUNNER_TEMP=str(self.temp), GITHUB_OUTPUT=str(output),
                   GITHUB_ACTION_PATH=str(ROOT))
        env.update({k: self.fill(v) for k, v in (raw.get("env") or {}).items()})
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=self.workdir, env=env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
        if "id" in raw:
            self.outputs[raw["id"]] = dict(
                line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        return Step(raw["name"], "ran", proc.returncode, proc.stdout, proc.stderr)


def workflow_kaudit_step() -> dict[str, Any]:
    """The workflow example's step that uses the kaudit action."""
    jobs = load(WORKFLOW)["jobs"]
    steps = [s for job in jobs.values() for s in job["steps"]]
    uses = [s for s in steps if re.search(r"/kaudit@", s.get("uses", ""))]
    assert len(uses) == 1, "the workflow example should use the kaudit action once"
    step: dict[str, Any] = uses[0]
    return step


def run_action(inputs: dict[str, str], repo: Path, env: dict[str, str],
               tmp_path: Path) -> dict[str, Step]:
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    return ActionRun({k: str(v) for k, v in inputs.items()}, repo, env, temp).run()


SARIF_STEP, UPLOAD_STEP, ANNOTATE_STEP = (
    "kaudit check (SARIF)", "Upload SARIF to code scanning", "kaudit check (annotations)")


# -- action.yml -----------------------------------------------------------------------------


def test_action_is_composite_and_every_input_is_declared_and_used() -> None:
    action = load(ROOT / "action.yml")
    assert action["runs"]["using"] == "composite"
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    used = set(re.findall(r"inputs\.([\w-]+)", text))
    assert used == set(action["inputs"]), "declared and used inputs differ"
    for name, spec in action["inputs"].items():
        assert spec.get("description"), f"input {name} has no description"
    for step in action["runs"]["steps"]:
        if "run" in step:  # inputs reach scripts through env, never spliced into the code
            assert "${{" not in step["run"], step["name"]
    uses = {s["uses"].split("@")[0] for s in action["runs"]["steps"] if "uses" in s}
    assert uses == {"actions/setup-python", "github/codeql-action/upload-sarif"}


def test_workflow_example_passes_on_the_sample_repository(
        repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    workflow = load(WORKFLOW)
    assert workflow["permissions"]["security-events"] == "write"
    steps = run_action(workflow_kaudit_step()["with"], repo, env, tmp_path)

    install = steps["Install kaudit"]
    assert install.status == "not-run" and "$GITHUB_ACTION_PATH" in install.given["run"]
    assert steps[SARIF_STEP].code == 0, steps[SARIF_STEP].stderr
    sarif_path = repo / steps[UPLOAD_STEP].given["sarif_file"]
    sarif = json.loads(sarif_path.read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    assert run["tool"]["driver"]["name"] == "kaudit"
    # The sample is sound: only the note that logs.* accepts loss.
    assert {r["level"] for r in run["results"]} <= {"note"}
    assert steps[UPLOAD_STEP].given["category"] == "kaudit"
    annotate = steps[ANNOTATE_STEP]
    assert annotate.code == 0, annotate.stderr
    assert "::error" not in annotate.stdout


def test_workflow_fails_on_a_broken_manifest_and_points_at_its_line(
        broken_repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    steps = run_action(workflow_kaudit_step()["with"], broken_repo, env, tmp_path)
    # The SARIF run does not fail, so the findings are uploaded...
    assert steps[SARIF_STEP].code == 0, steps[SARIF_STEP].stderr
    assert steps[UPLOAD_STEP].status == "not-run"
    sarif = json.loads((broken_repo / steps[UPLOAD_STEP].given["sarif_file"]).read_text())
    errors = [r for r in sarif["runs"][0]["results"] if r["level"] == "error"]
    assert {r["ruleId"] for r in errors} >= {"KA101", "KA105"}
    locations = {loc["physicalLocation"]["artifactLocation"]["uri"]
                 for r in errors for loc in r["locations"]}
    assert locations == {BROKEN_MANIFEST}
    # ... and the annotations run fails the job, pointing at the manifest.
    annotate = steps[ANNOTATE_STEP]
    assert annotate.code == 1
    assert re.search(rf"^::error file={re.escape(BROKEN_MANIFEST)},line=\d+,", annotate.stdout,
                     re.MULTILINE)


def test_action_with_a_missing_policy_stops_with_exit_2(
        repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    inputs = dict(workflow_kaudit_step()["with"], policy="kafka/no-such-policy.yaml")
    steps = run_action(inputs, repo, env, tmp_path)
    step = steps[SARIF_STEP]
    assert step.code == 2
    assert step.stderr.strip().startswith("kaudit: error:") and len(
        step.stderr.strip().splitlines()) == 1
    assert "no-such-policy.yaml" in step.stderr
    assert steps[UPLOAD_STEP].status == steps[ANNOTATE_STEP].status == "not-reached"


def test_action_without_manifests_snapshot_or_cluster_says_so(
        repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    steps = run_action({"policy": "kafka/policy.yaml"}, repo, env, tmp_path)
    prepare = steps["Prepare the kaudit check arguments"]
    assert prepare.code == 2
    assert "::error title=kaudit::give the manifests, snapshot or bootstrap-server" in (
        prepare.stdout)


def test_action_fail_on_reaches_kaudit(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    inputs = dict(workflow_kaudit_step()["with"], **{"fail-on": "info"})
    steps = run_action(inputs, repo, env, tmp_path)
    assert steps[SARIF_STEP].code == 0
    annotate = steps[ANNOTATE_STEP]
    assert annotate.code == 1  # the sample's one info finding now fails the job
    assert "::notice file=kafka/topics/logs.yaml" in annotate.stdout


def test_action_args_and_upload_switch_reach_kaudit(
        broken_repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    inputs = dict(workflow_kaudit_step()["with"], args="--exit-zero",
                  **{"upload-sarif": "false"})
    steps = run_action(inputs, broken_repo, env, tmp_path)
    assert steps[UPLOAD_STEP].status == "skipped"
    assert steps[ANNOTATE_STEP].code == 0  # --exit-zero: reported, not failed
    assert "::error file=" in steps[ANNOTATE_STEP].stdout


# -- GitLab CI --------------------------------------------------------------------------------


def gitlab_job() -> dict[str, Any]:
    jobs = {k: v for k, v in load(GITLAB).items() if isinstance(v, dict) and "script" in v}
    assert len(jobs) == 1
    return next(iter(jobs.values()))


def run_gitlab_script(repo: Path, env: dict[str, str]) -> list[tuple[str, int, str, str]]:
    """The job's script lines in order, as GitLab runs them: the first failure ends it."""
    done = []
    for line in gitlab_job()["script"]:
        if re.match(r"(python -m )?pip install", line):
            assert "kaudit" in line
            continue
        assert line.startswith("kaudit "), f"unexpected script line: {line}"
        proc = subprocess.run(["bash", "-c", line], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        done.append((line, proc.returncode, proc.stdout, proc.stderr))
        if proc.returncode != 0:
            break
    return done


def junit_report_path() -> str:
    job = gitlab_job()
    assert job["artifacts"]["when"] == "always"
    path = job["artifacts"]["reports"]["junit"]
    writers = [line for line in job["script"] if "--format junit" in line]
    assert len(writers) == 1 and shlex.split(writers[0])[-1] == path
    return str(path)


def test_gitlab_example_passes_and_writes_a_junit_report(repo: Path,
                                                         env: dict[str, str]) -> None:
    ran = run_gitlab_script(repo, env)
    assert [code for _, code, _, _ in ran] == [0, 0], ran
    suites = ET.parse(repo / junit_report_path()).getroot()
    assert suites.tag == "testsuites" and suites.get("failures") == "0"
    assert int(suites.get("tests", "0")) > 0


def test_gitlab_example_fails_on_a_broken_manifest_with_the_failure_in_junit(
        broken_repo: Path, env: dict[str, str]) -> None:
    ran = run_gitlab_script(broken_repo, env)
    assert [code for _, code, _, _ in ran] == [0, 1]  # the table never fails the job
    assert "clicks" in ran[0][2]
    suites = ET.parse(broken_repo / junit_report_path()).getroot()
    assert int(suites.get("failures", "0")) >= 2
    failures = [tc.get("name") for tc in suites.iter("testcase") if tc.find("failure") is not None]
    assert failures and all("clicks" in str(name) for name in failures)


# -- pre-commit -------------------------------------------------------------------------------


def pre_commit_command(repo: Path) -> list[str]:
    """What pre-commit runs for the example config: the hook's entry, args, and files."""
    config = load(PRE_COMMIT)
    hooks = [h for r in config["repos"] for h in r["hooks"]]
    assert [h["id"] for h in hooks] == ["kaudit-check"]
    hook = hooks[0]
    definition = next(h for h in load(ROOT / ".pre-commit-hooks.yaml")
                      if h["id"] == hook["id"])
    assert definition["language"] == "python"
    command = [*shlex.split(definition["entry"]), *hook.get("args", [])]
    if hook.get("pass_filenames", definition.get("pass_filenames", True)):
        pattern = re.compile(hook.get("files", definition.get("files", "")))
        command += sorted(str(p.relative_to(repo)) for p in repo.rglob("*.y*ml")
                          if pattern.search(str(p.relative_to(repo))))
    return command


def run_pre_commit(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = pre_commit_command(repo)
    assert command[0] == "kaudit"
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def test_pre_commit_example_passes_on_the_sample(repo: Path, env: dict[str, str]) -> None:
    result = run_pre_commit(repo, env)
    assert result.returncode == 0, result.stderr
    assert "0 errors" in result.stdout


def test_pre_commit_example_blocks_a_broken_manifest(broken_repo: Path,
                                                     env: dict[str, str]) -> None:
    result = run_pre_commit(broken_repo, env)
    assert result.returncode == 1, result.stderr
    assert "topic clicks" in result.stdout and "KA101" in result.stdout


def test_every_file_the_examples_name_is_in_the_sample() -> None:
    """Paths in the examples (policy, manifests, client configs) exist in the layout."""
    policy = load(SAMPLE / "kafka" / "policy.yaml")
    for client in policy.get("clients", []):
        assert (SAMPLE / "kafka" / client["config"]).is_file()
    with_ = workflow_kaudit_step()["with"]
    for path in str(with_["policy"]).split() + str(with_["manifests"]).split():
        assert (SAMPLE / path).exists(), path
