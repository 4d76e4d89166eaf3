"""deploy/: the compose file, Kubernetes manifests and Dockerfiles parse, hang
together, and name only images, files and settings that exist; the documented
production environment passes ``manage.py check --deploy``.

No Docker engine or kubectl runs here, so images are not built and manifests
are checked by parsing; ``docker compose config`` runs where the plugin exists.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
APP_SERVICES = {"setup", "web", "worker", "beat", "wyoming"}
# Read by libraries, not by our settings: boto3 (S3 audio), Django itself.
FOREIGN_ENV = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "DJANGO_SETTINGS_MODULE"}


def known_settings() -> set[str]:
    """Every environment variable the code reads through infra/env.py helpers, and each one's
    ``NAME_FILE`` (the file holding its value, as a secret mounts it)."""
    pattern = re.compile(r'env_(?:str|bool|int|list|choice|float)\(\s*"([A-Z0-9_]+)"')
    names: set[str] = set()
    for package in ("ttsplatform", "infra", "accounts", "tts"):
        for path in (ROOT / package).rglob("*.py"):
            names.update(pattern.findall(path.read_text()))
    return names | {f"{name}_FILE" for name in names}


def expand(value: str) -> str:
    """Compose's ${VAR:-default} with the default (what runs when nothing is set)."""
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", value)


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def manifests() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(K8S.glob("*.yaml")):
        docs.extend({**d, "_file": path.name} for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in manifests() if d["kind"] == kind}


def test_it_describes_every_service_with_a_health_check() -> None:
    services = compose()["services"]
    assert set(services) == {"postgres", "redis", "redis-cache", *APP_SERVICES}
    known = known_settings()
    for name, service in services.items():
        image = expand(service["image"])
        assert ":" in image and not image.endswith(":latest"), f"{name}: pin the image tag"
        if name in APP_SERVICES:
            assert (ROOT / expand(service["build"]["dockerfile"])).is_file()
            assert image == "ttsplatform:cpu"
            unknown = set(service["environment"]) - known - FOREIGN_ENV
            assert not unknown, f"{name}: settings that do not exist: {unknown}"
            assert service["volumes"] == [] or service["volumes"] == [
                "audio:/var/lib/tts/media",
                "models:/var/lib/tts/models",
            ]
        if name != "setup":
            assert service["healthcheck"]["test"], f"{name} has no health check"
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["setup"]["condition"] == "service_completed_successfully"
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["setup"]["command"] == ["sh", "deploy/bootstrap.sh"]
    assert (DEPLOY / "bootstrap.sh").is_file()


def test_compose_is_locked_down_and_bounded_as_shipped() -> None:
    """#41: published on this machine only, CPU limits beside the memory limits (the pools size to
    them), one engine ledger for the machine, and the audio cache in a bounded Redis of its own, so a
    full cache never evicts the broker's queue, the limits or the slots."""
    services = compose()["services"]
    for name in ("web", "wyoming"):
        assert all(expand(port).startswith("127.0.0.1:") for port in services[name]["ports"]), name
    for name in ("web", "worker", "wyoming", "beat", "redis", "redis-cache"):
        assert float(expand(str(services[name]["cpus"]))) > 0, name
    env = services["web"]["environment"]
    assert expand(env["TTS_ENGINE_SHARE_HOST"]) and env["AUDIO_CACHE_REDIS_URL"] == "redis://redis-cache:6379/0"
    cache, broker = services["redis-cache"]["command"], services["redis"]["command"]
    assert cache[cache.index("--maxmemory-policy") + 1] == "allkeys-lru" and "--maxmemory" in cache
    assert broker[broker.index("--maxmemory-policy") + 1] == "noeviction" and "--maxmemory" in broker
    for name in ("web", "worker", "wyoming", "setup"):
        assert services[name]["depends_on"]["redis-cache"]["condition"] == "service_healthy", name


def _compose_command() -> list[str] | None:
    """``docker compose`` (the plugin) or Debian's ``docker-compose``; neither needs a Docker engine for config."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


@pytest.mark.skipif(_compose_command() is None, reason="neither docker compose nor docker-compose is installed")
def test_it_passes_docker_compose_config() -> None:
    env = {**os.environ, "SECRET_KEY": "x" * 50}
    command = _compose_command()
    assert command is not None
    result = subprocess.run(
        [*command, "-f", str(DEPLOY / "compose.yaml"), "config", "--quiet"], env=env, capture_output=True
    )
    assert result.returncode == 0, result.stderr.decode()


def test_it_has_kubernetes_manifests_that_reference_what_exists() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    for resource in kustomization["resources"]:
        assert (K8S / resource).is_file(), resource
    images = {i["name"] for i in kustomization["images"]}
    config_maps, secrets_, claims = by_kind("ConfigMap"), by_kind("Secret"), by_kind("PersistentVolumeClaim")
    deployments = by_kind("Deployment")
    assert set(deployments) == {"tts-web", "tts-worker", "tts-beat", "tts-wyoming"}
    assert set(by_kind("Job")) == {"tts-setup"}
    known = known_settings()
    for cm in config_maps.values():
        assert not set(cm["data"]) - known, f"ConfigMap keys that are no setting: {set(cm['data']) - known}"
    for secret in secrets_.values():  # a Secret given as environment holds settings only
        if secret["metadata"]["name"] in _env_secrets():
            assert not set(secret["stringData"]) - known - FOREIGN_ENV

    workloads = [*deployments.values(), *by_kind("Job").values()]
    for workload in workloads:
        pod = workload["spec"]["template"]["spec"]
        labels = workload["spec"]["template"]["metadata"]["labels"]
        if workload["kind"] == "Deployment":
            assert workload["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for volume in volumes.values():
            if "secret" in volume:
                assert volume["secret"]["secretName"] in secrets_
            else:
                assert "emptyDir" in volume or volume["persistentVolumeClaim"]["claimName"] in claims
        for container in pod["containers"]:
            assert container["image"] in images, f"{workload['metadata']['name']}: unknown image {container['image']}"
            assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
            # Pools size themselves to the CPU limit (cgroup cpu.max), never to the node's cores (#41 item 4).
            assert container["resources"]["limits"]["cpu"], workload["metadata"]["name"]
            locked = container["securityContext"]
            assert locked["allowPrivilegeEscalation"] is False and locked["capabilities"] == {"drop": ["ALL"]}
            assert locked["readOnlyRootFilesystem"] is True
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in config_maps
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in secrets_
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes

    web = deployments["tts-web"]["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"] for p in web["ports"]}
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert web["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert {web[p]["httpGet"]["port"] for p in ("readinessProbe", "livenessProbe", "startupProbe")} <= ports
    for service in by_kind("Service").values():
        assert any(
            service["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
            for d in deployments.values()
        )
    for hpa in by_kind("HorizontalPodAutoscaler").values():
        assert hpa["spec"]["scaleTargetRef"]["name"] in deployments
        assert hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    assert deployments["tts-beat"]["spec"]["replicas"] == 1
    for name in ("tts-web", "tts-worker", "tts-wyoming"):  # one engine ledger per node (#41 item 3)
        env = {e["name"]: e for e in deployments[name]["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["TTS_ENGINE_SHARE_HOST"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    policies = by_kind("NetworkPolicy")
    assert policies["tts-default-deny-ingress"]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    allowed = {
        p["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"]
        for n, p in policies.items()
        if n != "tts-default-deny-ingress"
    }
    assert allowed == {"tts-web", "tts-wyoming"}  # worker, beat and setup take no connections


def _env_secrets() -> set[str]:
    """The Secrets some pod takes as environment variables (``envFrom``)."""
    return {
        source["secretRef"]["name"]
        for workload in [*by_kind("Deployment").values(), *by_kind("Job").values()]
        for container in workload["spec"]["template"]["spec"]["containers"]
        for source in container.get("envFrom", [])
        if "secretRef" in source
    }


def test_wyoming_reads_its_key_from_a_secret_file_never_from_the_environment() -> None:
    """#41 item 6: the listener's key is a file mounted into the Wyoming service alone (a compose
    secret; a K8s Secret volume), and the server is pointed at it with TTS_WYOMING_API_KEY_FILE."""
    services = compose()["services"]
    wyoming = services["wyoming"]
    [mount] = wyoming["secrets"]
    declared = compose()["secrets"][mount["source"]]
    assert expand(declared["file"]) == "./secrets/wyoming_api_key"  # deploy/secrets/, which git ignores
    assert "/deploy/secrets/" in (ROOT / ".gitignore").read_text().splitlines()
    assert wyoming["environment"]["TTS_WYOMING_API_KEY_FILE"] == f"/run/secrets/{mount['target']}"
    for name, service in services.items():
        assert "TTS_WYOMING_API_KEY" not in service.get("environment", {}), name
        assert name == "wyoming" or "secrets" not in service, name
    assert "WYOMING_API_KEY}" not in (DEPLOY / "compose.yaml").read_text()  # no key from the host's environment

    pod = by_kind("Deployment")["tts-wyoming"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    key_file = Path(env["TTS_WYOMING_API_KEY_FILE"])
    [mount_] = [m for m in container["volumeMounts"] if Path(m["mountPath"]) == key_file.parent]
    assert mount_["readOnly"] is True
    [volume] = [v for v in pod["volumes"] if v["name"] == mount_["name"]]
    secret = by_kind("Secret")[volume["secret"]["secretName"]]
    assert key_file.name in secret["stringData"] and volume["secret"]["defaultMode"] == 0o440
    assert secret["metadata"]["name"] not in _env_secrets()  # mounted into this pod only, no environment
    others = [d for n, d in by_kind("Deployment").items() if n != "tts-wyoming"] + list(by_kind("Job").values())
    for workload in others:
        volumes = workload["spec"]["template"]["spec"].get("volumes", [])
        assert all(v.get("secret", {}).get("secretName") != secret["metadata"]["name"] for v in volumes)
    for held in by_kind("Secret").values():
        assert "TTS_WYOMING_API_KEY" not in held["stringData"]


def test_it_keeps_torch_and_cuda_out_of_the_cpu_image() -> None:
    for name in ("Dockerfile.cpu", "Dockerfile.gpu"):
        text = (DEPLOY / name).read_text()
        for source in re.findall(r"^COPY (?!--from)(\S+) ", text, flags=re.M):
            assert (ROOT / source).exists(), f"{name} copies {source}, which does not exist"
        assert "ttsplatform.serve" in text  # the web tier: one daphne per CPU serving ttsplatform.asgi
        assert re.search(r"^USER tts$", text, flags=re.M), f"{name} must not run as root"
    cpu = (DEPLOY / "Dockerfile.cpu").read_text()
    installs = " ".join(re.findall(r"pip install ([^\\&\n]+)", cpu))
    assert "torch" not in installs and "cuda" not in cpu.lower().replace("no cuda", "").replace("torch/cuda", "")
    assert not re.search(r"^FROM .*(nvidia|cuda)", cpu, flags=re.M | re.I)


def test_it_passes_the_deploy_checks_with_the_documented_production_settings(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TTS_", "DJANGO_"))}
    env.update(by_kind("ConfigMap")["tts-config"]["data"])
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "ttsplatform.settings",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "VAR_DIR": str(tmp_path),
            "MEDIA_ROOT": str(tmp_path / "media"),
            "TTS_MODEL_LIFECYCLE": "false",
        }
    )
    env.pop("DEBUG", None)
    env.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_no_server_is_told_to_trust_the_clients_forwarded_for() -> None:
    # daphne's --proxy-headers takes the leftmost X-Forwarded-For entry, which any client writes;
    # the client's address comes from TRUSTED_PROXIES instead (infra/client_address.py).
    for path in [p for p in DEPLOY.rglob("*") if p.is_file()] + [ROOT / "Makefile"]:
        assert "--proxy-headers" not in path.read_text(), path.relative_to(ROOT)
    from ttsplatform.serve import Supervisor

    with socket.socket() as sock:
        assert "--proxy-headers" not in Supervisor([sock], 1).command()
    env = {e["name"] for e in by_kind("Deployment")["tts-web"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert "TRUSTED_PROXIES" in by_kind("ConfigMap")["tts-config"]["data"] or "TRUSTED_PROXIES" in env


def test_every_service_that_synthesizes_shares_the_model_files() -> None:
    # setup writes joe's patched copy and windowed parts under VAR_DIR/models and the database names
    # those paths: a container without the shared directory cannot open them (found by make deploy-check).
    services = compose()["services"]
    for name in ("setup", "web", "worker", "wyoming"):
        assert "models:/var/lib/tts/models" in services[name]["volumes"], name
    claims = by_kind("PersistentVolumeClaim")
    assert claims["tts-models"]["spec"]["accessModes"] == ["ReadWriteMany"]
    workloads = {**by_kind("Deployment"), **by_kind("Job")}
    for name in ("tts-web", "tts-worker", "tts-wyoming", "tts-setup"):
        pod = workloads[name]["spec"]["template"]["spec"]
        mounts = {m["mountPath"]: m["name"] for c in pod["containers"] for m in c.get("volumeMounts", [])}
        volume = {v["name"]: v for v in pod["volumes"]}[mounts["/var/lib/tts/models"]]
        assert volume["persistentVolumeClaim"]["claimName"] == "tts-models", name


def test_the_images_copy_every_package_the_code_imports() -> None:
    # The images once left out infra/ (settings import it): nothing would start.
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert {"accounts", "infra", "tts", "ttsplatform"} <= packages
    for name in ("Dockerfile.cpu", "Dockerfile.gpu"):
        final = (DEPLOY / name).read_text().rsplit("\nFROM ", 1)[1]
        copied = set(re.findall(r"^COPY (?!--from)(\S+) ", final, flags=re.M))
        assert packages | {"manage.py", "templates", "static"} <= copied, f"{name} misses {packages - copied}"


def test_each_service_has_a_memory_limit_within_the_kubernetes_limit() -> None:
    # Both come from bench/bench_deploy_memory.py (docs/deploy.md, "Limits set from these figures").
    def mib(value: str) -> int:
        number, unit = re.fullmatch(r"(\d+)([a-zA-Z]*)", str(value)).groups()  # type: ignore[union-attr]
        return int(number) * {"": 1 / 2**20, "m": 1, "g": 1024, "Mi": 1, "Gi": 1024}[unit]

    services = compose()["services"]
    pods = {n: d["spec"]["template"]["spec"]["containers"][0] for n, d in by_kind("Deployment").items()}
    for service, pod in (
        ("web", "tts-web"),
        ("worker", "tts-worker"),
        ("beat", "tts-beat"),
        ("wyoming", "tts-wyoming"),
    ):
        limit = mib(expand(str(services[service]["mem_limit"])))
        resources = pods[pod]["resources"]
        assert mib(resources["requests"]["memory"]) <= mib(resources["limits"]["memory"])
        assert limit <= mib(resources["limits"]["memory"]), service
    for service in ("postgres", "redis", "setup"):
        assert services[service]["mem_limit"], service


def test_the_deploy_check_scripts_parse() -> None:
    # make deploy-check itself is too slow for make test; its scripts at least parse here.
    assert "deploy-check:" in (ROOT / "Makefile").read_text()
    assert (DEPLOY / "check" / "run.sh").is_file()
    for script in [*DEPLOY.glob("local/*.sh"), *DEPLOY.glob("check/*.sh"), DEPLOY / "bootstrap.sh"]:
        result = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"{script.name}: {result.stderr}"
    for module in DEPLOY.glob("check/*.py"):
        compile(module.read_text(), str(module), "exec")
