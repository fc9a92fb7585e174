"""The deployment files: every Kubernetes kustomization renders to manifests that are valid
for the Kubernetes version below, and docker compose and Kubernetes run the same commands
and probe the same health checks. (The stack itself is run for real by
scripts/compose-check, which is too slow for the test command.)

Kustomize's rules used by deploy/k8s (resources, patches as strategic merges, images,
labels) are applied here in a few lines; where a kustomize binary or `kubectl kustomize`
is installed, its output must be the same.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
KUBERNETES_VERSION = "1.30.0"  # the oldest release the manifests are written for (appArmorProfile)
KUSTOMIZATIONS = sorted(p.parent for p in K8S.rglob("kustomization.yaml"))
SUPPORTED = {"apiVersion", "kind", "resources", "patches", "images", "labels"}


# ------------------------------------------------------------------ kustomize, in brief

def _merge(base, patch):
    """A strategic merge patch: maps merge key by key, lists of named maps merge by name
    (containers, env, ports, volumes), other lists are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for key, value in patch.items():
            merged[key] = _merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    if (isinstance(base, list) and isinstance(patch, list)
            and all(isinstance(item, dict) and "name" in item for item in base + patch)):
        merged = [copy.deepcopy(item) for item in base]
        for item in patch:
            at = next((i for i, old in enumerate(merged) if old["name"] == item["name"]), None)
            if at is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[at] = _merge(merged[at], item)
        return merged
    return copy.deepcopy(patch)


def _containers(doc: dict) -> list[dict]:
    spec = doc.get("spec", {})
    pod = spec.get("template", {}).get("spec", {}) if "template" in spec else spec
    return pod.get("containers", []) + pod.get("initContainers", [])


def _key(doc: dict) -> tuple[str, str]:
    return doc["kind"], doc["metadata"]["name"]


def render(directory: Path) -> list[dict]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unsupported = set(kustomization) - SUPPORTED
    assert not unsupported, f"{directory}: this test renders no {sorted(unsupported)}"
    docs: list[dict] = []
    for entry in kustomization.get("resources", []):
        path = directory / entry
        docs += render(path) if path.is_dir() else [d for d in yaml.safe_load_all(path.read_text()) if d]
    keys = [_key(d) for d in docs]
    assert len(keys) == len(set(keys)), f"{directory}: a resource is defined twice"
    for patch in kustomization.get("patches", []):
        assert set(patch) == {"path"}, f"{directory}: only patches with a path are rendered here"
        for change in yaml.safe_load_all((directory / patch["path"]).read_text()):
            at = keys.index(_key(change))
            docs[at] = _merge(docs[at], change)
    for image in kustomization.get("images", []):
        for doc in docs:
            for container in _containers(doc):
                name, _, tag = container["image"].partition(":")
                if name == image["name"]:
                    container["image"] = f"{image.get('newName', name)}:{image.get('newTag', tag)}".rstrip(":")
    for label in kustomization.get("labels", []):
        assert not label.get("includeSelectors") and not label.get("includeTemplates")
        for doc in docs:
            doc.setdefault("metadata", {}).setdefault("labels", {}).update(label["pairs"])
    return docs


def _by_key(docs: list[dict]) -> dict[tuple[str, str], dict]:
    return {_key(d): d for d in docs}


def _kustomize_binary() -> list[str] | None:
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


# ------------------------------------------------------------------ rendering, validity

def test_there_is_a_base_and_a_gpu_overlay():
    assert {p.relative_to(K8S).as_posix() for p in KUSTOMIZATIONS} == {"base", "overlays/gpu"}


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda p: p.relative_to(K8S).as_posix())
def test_every_manifest_is_valid_for_the_stated_kubernetes_version(directory):
    docs = render(directory)
    assert docs
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{directory.name}: {doc['kind']}/{doc['metadata']['name']}: {exc.message} "
                        f"at {'.'.join(map(str, exc.path))}")


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda p: p.relative_to(K8S).as_posix())
def test_kustomize_itself_renders_the_same(directory):
    command = _kustomize_binary()
    if command is None:
        pytest.skip("no kustomize or kubectl here; the rules above rendered it")
    out = subprocess.run([*command, str(directory)], capture_output=True, text=True, timeout=120, check=True).stdout
    assert _by_key([d for d in yaml.safe_load_all(out) if d]) == _by_key(render(directory))


# ------------------------------------------------------------------ compose and k8s agree

def _unescaped(value):
    """What compose hands the container: "$$" in the file is a literal "$"."""
    if isinstance(value, str):
        return value.replace("$$", "$")
    if isinstance(value, list):
        return [_unescaped(v) for v in value]
    if isinstance(value, dict):
        return {k: _unescaped(v) for k, v in value.items()}
    return value


def _compose() -> dict:
    return _unescaped(yaml.safe_load((ROOT / "docker-compose.yml").read_text()))


def _container(docs: dict, name: str) -> dict:
    (container,) = _containers(docs[("Deployment", name)] if ("Deployment", name) in docs else docs[("Job", name)])
    return container


def _health_paths(test: list[str]) -> set[str]:
    return set(re.findall(r"http://127\.0\.0\.1:8000(/[a-z/]*)", " ".join(test)))


def test_web_health_endpoints_are_the_same_and_exist():
    from grader.app import create_app

    web = _compose()["services"]["web"]
    compose_paths = _health_paths(web["healthcheck"]["test"])
    container = _container(_by_key(render(K8S / "base")), "grader-web")
    k8s_paths = {container[probe]["httpGet"]["path"] for probe in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert compose_paths == k8s_paths == {"/healthz"}
    app = create_app({"TESTING": True, "DATABASE_URL": "sqlite://"})
    routes = {rule.rule for rule in app.url_map.iter_rules()}
    assert {"/healthz", "/readyz"} <= routes


def test_workers_are_probed_with_the_same_command():
    from grader.cli import main

    services = _compose()["services"]
    gpu = _by_key(render(K8S / "overlays" / "gpu"))
    for service, deployment in (("worker-cpu", "grader-worker-cpu"), ("worker-gpu", "grader-worker-gpu")):
        test = services[service]["healthcheck"]["test"]
        assert test[0] == "CMD"
        assert _container(gpu, deployment)["livenessProbe"]["exec"]["command"] == test[1:]
        assert test[1:3] == ["grader", "worker-alive"] and "worker-alive" in main.commands


def test_compose_and_k8s_run_the_same_commands_with_the_same_privileges():
    services = _compose()["services"]
    docs = _by_key(render(K8S / "overlays" / "gpu"))
    pairs = {"web": "grader-web", "beat": "grader-beat", "migrate": "grader-migrate",
             "worker-cpu": "grader-worker-cpu", "worker-gpu": "grader-worker-gpu"}
    for service, name in pairs.items():
        compose, container = services[service], _container(docs, name)
        if "entrypoint" in compose:  # the grading services: the cgroup delegate first, then the command
            assert container["command"] == compose["entrypoint"], service
            assert container["args"] == compose["command"], service
            context = container["securityContext"]
            assert set(context["capabilities"]["add"]) == set(compose["cap_add"]), service
            assert context["runAsUser"] == 0 and "user" not in compose, service
            assert "apparmor=unconfined" in compose["security_opt"] and context["appArmorProfile"]["type"] == "Unconfined"
            assert "seccomp=unconfined" in compose["security_opt"] and context["seccompProfile"]["type"] == "Unconfined"
        else:
            assert container["command"] == compose["command"], service
            assert compose["user"] == "grader" and docs[("Deployment", name)]["spec"]["template"]["spec"][
                "securityContext"]["runAsUser"] == 10001, service


def test_k8s_config_carries_what_compose_sets():
    services = _compose()["services"]
    base = _by_key(render(K8S / "base"))
    gpu = _by_key(render(K8S / "overlays" / "gpu"))
    secret_keys = {"GRADER_DATABASE_URL", "GRADER_SECRET_KEY"}  # in the Secret "grader-secrets"
    assert set(services["worker-cpu"]["environment"]) - secret_keys <= set(base[("ConfigMap", "grader-config")]["data"])
    assert base[("ConfigMap", "grader-config")]["data"]["GRADER_GPU_QUEUE"] == "0"
    assert gpu[("ConfigMap", "grader-config")]["data"]["GRADER_GPU_QUEUE"] == "1"
    worker = _container(gpu, "grader-worker-gpu")
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "gpu,gpu-regrade" in worker["args"]
    for doc in gpu.values():
        for container in _containers(doc):
            refs = {ref.get("secretRef", {}).get("name") for ref in container.get("envFrom", [])}
            assert "grader-secrets" in refs and container["image"].startswith("autograd-grader:")
    assert ("Deployment", "grader-worker-gpu") not in base


def test_compose_defaults_are_the_registry_images():
    text = (ROOT / "docker-compose.yml").read_text()
    assert "${POSTGRES_IMAGE:-postgres:16}" in text and "${REDIS_IMAGE:-redis:7}" in text
    assert "${GRADER_BASE_IMAGE:-python:3.11-slim}" in text
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE=python:3.11-slim" in dockerfile and "ARG TORCH_WHEEL=" in dockerfile


def test_the_renderer_merges_as_kustomize_does():
    base = {"spec": {"containers": [{"name": "a", "image": "x", "env": [{"name": "K", "value": "1"}]}]},
            "data": {"A": "1", "B": "2"}}
    patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "K", "value": "2"}, {"name": "L", "value": "3"}]}]},
             "data": {"B": "3"}}
    assert _merge(base, patch) == {
        "spec": {"containers": [{"name": "a", "image": "x",
                                 "env": [{"name": "K", "value": "2"}, {"name": "L", "value": "3"}]}]},
        "data": {"A": "1", "B": "3"}}


# ------------------------------------------------------------------ the worker's cgroup in a container

@pytest.mark.parametrize("mount_root, own, expected", [
    ("/", "/", "/sys/fs/cgroup"),                       # its own cgroup namespace (Docker's default on v2)
    ("/", "/worker", "/sys/fs/cgroup/worker"),
    ("/system.slice/docker-1.scope", "/system.slice/docker-1.scope", "/sys/fs/cgroup"),  # the host's namespace
    ("/system.slice/docker-1.scope", "/system.slice/docker-1.scope/worker", "/sys/fs/cgroup/worker"),
])
def test_a_worker_finds_its_cgroup_whichever_namespace_the_container_has(monkeypatch, mount_root, own, expected):
    from grader.engine import cgroup

    files = {"/proc/self/cgroup": f"0::{own}\n",
             "/proc/self/mountinfo": f"30 25 0:26 {mount_root} /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n"}
    monkeypatch.setattr(cgroup, "_read", lambda path: files[str(path)])
    assert str(cgroup._v2_own()) == expected
