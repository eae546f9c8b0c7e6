-- Argo CD health check for an OCM ManifestWork (work.open-cluster-management.io/v1), the
-- object the argocd-pull-addon Config Management Plugin delivers. Install it as
-- resource.customizations.health.work.open-cluster-management.io_ManifestWork in argocd-cm
-- (docs/cmp.md).
--
-- Healthy     Applied and Available are True for the current generation, and every
--             Deployment/DaemonSet the work reports (well-known status feedback) is ready.
-- Degraded    Applied, Available or the work's Degraded condition says so; the message
--             names the manifests that failed and why.
-- Progressing anything else: the work agent has not reported the current generation yet,
--             or a workload is still rolling out.
--
-- Argo CD runs it with the base, table and a safe os library only: no string library.

local hs = {}

local function conditionsByType(conditions)
  local byType = {}
  if conditions ~= nil then
    for _, c in ipairs(conditions) do
      if c.type ~= nil then
        byType[c.type] = c
      end
    end
  end
  return byType
end

local function manifestName(meta)
  if meta == nil then
    return "manifest"
  end
  local name = meta.name or ""
  if meta.namespace ~= nil and meta.namespace ~= "" then
    name = meta.namespace .. "/" .. name
  end
  return (meta.kind or "object") .. " " .. name
end

local function feedbackValues(manifest)
  local values = {}
  if manifest.statusFeedback ~= nil and manifest.statusFeedback.values ~= nil then
    for _, v in ipairs(manifest.statusFeedback.values) do
      if v.name ~= nil and v.fieldValue ~= nil then
        values[v.name] = v.fieldValue.integer
      end
    end
  end
  return values
end

-- A condition counts only when the agent wrote it for the work's current generation.
local function current(c)
  if c == nil then
    return false
  end
  local generation = obj.metadata.generation
  return generation == nil or c.observedGeneration == nil or c.observedGeneration >= generation
end

local manifests = {}
if obj.status ~= nil and obj.status.resourceStatus ~= nil and obj.status.resourceStatus.manifests ~= nil then
  manifests = obj.status.resourceStatus.manifests
end

-- Per-manifest failures and workloads still rolling out.
local failures = {}
local rollingOut = {}
for _, m in ipairs(manifests) do
  local name = manifestName(m.resourceMeta)
  local byType = conditionsByType(m.conditions)
  for _, t in ipairs({"Applied", "Available"}) do
    local c = byType[t]
    if c ~= nil and c.status == "False" then
      table.insert(failures, name .. ": " .. (c.message or (t .. " is False")))
    end
  end
  local kind = m.resourceMeta and m.resourceMeta.kind
  local values = feedbackValues(m)
  if kind == "Deployment" and values.Replicas ~= nil then
    local available = values.AvailableReplicas or 0
    if available < values.Replicas then
      table.insert(rollingOut, name .. ": " .. tostring(available) .. "/" .. tostring(values.Replicas) .. " replicas available")
    end
  elseif kind == "DaemonSet" and values.DesiredNumberScheduled ~= nil then
    local available = values.NumberAvailable or 0
    if available < values.DesiredNumberScheduled then
      table.insert(rollingOut, name .. ": " .. tostring(available) .. "/" .. tostring(values.DesiredNumberScheduled) .. " pods available")
    end
  end
end

local work = conditionsByType(obj.status and obj.status.conditions)
local applied, available, degraded = work["Applied"], work["Available"], work["Degraded"]

local function withFailures(message)
  if #failures == 0 then
    return message
  end
  return message .. ": " .. table.concat(failures, "; ")
end

if applied ~= nil and applied.status == "False" and current(applied) then
  hs.status = "Degraded"
  hs.message = withFailures(applied.message or "The manifests could not be applied")
  return hs
end
if degraded ~= nil and degraded.status == "True" and current(degraded) then
  hs.status = "Degraded"
  hs.message = withFailures(degraded.message or "The work is degraded")
  return hs
end
if available ~= nil and available.status == "False" and current(available) then
  hs.status = "Degraded"
  hs.message = withFailures(available.message or "Some manifests are not available")
  return hs
end
if applied == nil or not current(applied) or applied.status ~= "True" then
  hs.status = "Progressing"
  hs.message = "Waiting for the work agent to apply the manifests"
  return hs
end
if available == nil or not current(available) or available.status ~= "True" then
  hs.status = "Progressing"
  hs.message = "Waiting for the manifests to become available on the managed cluster"
  return hs
end
if #rollingOut > 0 then
  hs.status = "Progressing"
  hs.message = table.concat(rollingOut, "; ")
  return hs
end
hs.status = "Healthy"
hs.message = available.message or "All manifests are applied and available"
return hs
