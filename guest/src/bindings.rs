//! The component's WIT glue: the only file that knows wit-bindgen. It converts the generated
//! WIT types to the contract types and back, and exports the planner.

wit_bindgen::generate!({
    world: "planner-component",
    path: "../wit/planner.wit",
});

use exports::sublaunch::planner::planner::{Guest, GuestPlannerSession};
use exports::sublaunch::planner::types as wit;
use sublaunch_contract as c;

struct Planner;

impl Guest for Planner {
    type PlannerSession = crate::Session;

    fn plan(request: wit::PlanRequest) -> Result<wit::LaunchPlan, wit::PlanError> {
        crate::plan(&request.into()).map(Into::into).map_err(Into::into)
    }

    fn plan_json(request: String) -> Result<String, wit::PlanError> {
        crate::plan_json(request.as_bytes()).map_err(Into::into)
    }
}

impl GuestPlannerSession for crate::Session {
    fn new(registry: Vec<wit::ModelEntry>) -> Self {
        Self::new(registry.into_iter().map(Into::into).collect())
    }

    fn plan(&self, request: wit::PlanRequest) -> Result<wit::LaunchPlan, wit::PlanError> {
        crate::Session::plan(self, &request.into())
            .map(Into::into)
            .map_err(Into::into)
    }

    fn plan_json(&self, request: String) -> Result<String, wit::PlanError> {
        crate::Session::plan_json(self, request.as_bytes()).map_err(Into::into)
    }
}

export!(Planner);

impl From<wit::ModelEntry> for c::ModelEntry {
    fn from(m: wit::ModelEntry) -> Self {
        Self {
            provider: m.provider,
            id: m.id,
            name: m.name,
            reasoning: m.reasoning,
            thinking_levels: m.thinking_levels,
            context_window: m.context_window,
        }
    }
}

impl From<wit::LooseString> for c::LooseString {
    fn from(value: wit::LooseString) -> Self {
        match value {
            wit::LooseString::Text(text) => Self::Text(text),
            wit::LooseString::NotText(json) => Self::NotText(json),
        }
    }
}

impl From<wit::LooseStrings> for c::LooseStrings {
    fn from(value: wit::LooseStrings) -> Self {
        match value {
            wit::LooseStrings::Strings(items) => Self::Strings(items),
            wit::LooseStrings::NotStrings(json) => Self::NotStrings(json),
        }
    }
}

impl From<wit::ThinkingSetting> for c::ThinkingSetting {
    fn from(value: wit::ThinkingSetting) -> Self {
        match value {
            wit::ThinkingSetting::Text(text) => Self::Text(text),
            wit::ThinkingSetting::Disabled => Self::Disabled,
            wit::ThinkingSetting::Invalid(json) => Self::Invalid(json),
        }
    }
}

impl From<wit::UsageBudget> for c::UsageBudget {
    fn from(b: wit::UsageBudget) -> Self {
        Self {
            max_tokens: b.max_tokens,
            max_cost_usd: b.max_cost_usd,
        }
    }
}

impl From<c::UsageBudget> for wit::UsageBudget {
    fn from(b: c::UsageBudget) -> Self {
        Self {
            max_tokens: b.max_tokens,
            max_cost_usd: b.max_cost_usd,
        }
    }
}

impl From<wit::RetryPolicy> for c::RetryPolicy {
    fn from(r: wit::RetryPolicy) -> Self {
        Self {
            rate_limit: r.rate_limit,
        }
    }
}

impl From<c::RetryPolicy> for wit::RetryPolicy {
    fn from(r: c::RetryPolicy) -> Self {
        Self {
            rate_limit: r.rate_limit,
        }
    }
}

impl From<wit::PermissionMode> for c::PermissionMode {
    fn from(mode: wit::PermissionMode) -> Self {
        match mode {
            wit::PermissionMode::Plan => Self::Plan,
            wit::PermissionMode::ReadOnly => Self::ReadOnly,
            wit::PermissionMode::Writer => Self::Writer,
        }
    }
}

impl From<c::PermissionMode> for wit::PermissionMode {
    fn from(mode: c::PermissionMode) -> Self {
        match mode {
            c::PermissionMode::Plan => Self::Plan,
            c::PermissionMode::ReadOnly => Self::ReadOnly,
            c::PermissionMode::Writer => Self::Writer,
        }
    }
}

impl From<wit::Permissions> for c::Permissions {
    fn from(p: wit::Permissions) -> Self {
        Self {
            tools: p.tools,
            exclude_tools: p.exclude_tools,
            allow: p.allow,
            deny: p.deny,
            mode: p.mode.map(Into::into),
            nested: p.nested,
            max_depth: p.max_depth,
            nested_agents: p.nested_agents,
            nested_models: p.nested_models,
        }
    }
}

impl From<wit::ResolvedPermissions> for c::ResolvedPermissions {
    fn from(p: wit::ResolvedPermissions) -> Self {
        Self {
            tools: p.tools,
            exclude_tools: p.exclude_tools,
            allow: p.allow,
            deny: p.deny,
            mode: p.mode.into(),
            nested: p.nested,
            max_depth: p.max_depth,
            nested_agents: p.nested_agents,
            nested_models: p.nested_models,
        }
    }
}

impl From<wit::Ceiling> for c::Ceiling {
    fn from(ceiling: wit::Ceiling) -> Self {
        Self {
            source: ceiling.source,
            depth: ceiling.depth,
            permissions: ceiling.permissions.map(Into::into),
            sandbox: ceiling.sandbox.map(Into::into),
            max_thinking: ceiling.max_thinking,
        }
    }
}

impl From<wit::Agent> for c::Agent {
    fn from(a: wit::Agent) -> Self {
        Self {
            name: a.name,
            model: a.model.map(Into::into),
            thinking: a.thinking.map(Into::into),
            model_provider: a.model_provider,
            max_thinking: a.max_thinking.map(Into::into),
            machine: a.machine.map(Into::into),
            runner: a.runner.map(|r| c::Runner {
                kind: r.type_,
                adapter: r.adapter,
            }),
            output_schema: a.output_schema,
            default_reads: a.default_reads,
            usage_budget: a.usage_budget.map(Into::into),
            tool_budget: a.tool_budget,
            retry: a.retry.map(Into::into),
            extensions: a.extensions,
            required_extensions: a.required_extensions,
            skills: a.skills,
            permissions: a.permissions.map(Into::into),
            sandbox: a.sandbox.map(Into::into),
            acceptance_role: a.acceptance_role,
        }
    }
}

impl From<wit::Task> for c::Task {
    fn from(t: wit::Task) -> Self {
        Self {
            agent: t.agent,
            task: t.task,
            model: t.model.map(Into::into),
            thinking: t.thinking.map(Into::into),
            machine: t.machine.map(Into::into),
            cwd: t.cwd.map(Into::into),
            output_schema: t.output_schema,
            worktree: t.worktree,
            reads: t.reads,
            output: t.output,
            output_name: t.output_name,
            label: t.label,
            phase: t.phase,
            usage_budget: t.usage_budget.map(Into::into),
            tool_budget: t.tool_budget,
            retry: t.retry.map(Into::into),
            extensions: t.extensions,
            required_extensions: t.required_extensions,
            skills: t.skills,
            permissions: t.permissions.map(Into::into),
            sandbox: t.sandbox.map(Into::into),
            acceptance: t.acceptance,
            gate: t.gate,
        }
    }
}

impl From<wit::Step> for c::Step {
    fn from(s: wit::Step) -> Self {
        Self {
            agent: s.agent,
            task: s.task,
            model: s.model.map(Into::into),
            thinking: s.thinking.map(Into::into),
            machine: s.machine.map(Into::into),
            cwd: s.cwd.map(Into::into),
            output_schema: s.output_schema,
            worktree: s.worktree,
            reads: s.reads,
            output: s.output,
            output_name: s.output_name,
            label: s.label,
            phase: s.phase,
            usage_budget: s.usage_budget.map(Into::into),
            tool_budget: s.tool_budget,
            retry: s.retry.map(Into::into),
            extensions: s.extensions,
            required_extensions: s.required_extensions,
            skills: s.skills,
            permissions: s.permissions.map(Into::into),
            parallel: s.parallel.map(|tasks| tasks.into_iter().map(Into::into).collect()),
            sandbox: s.sandbox.map(Into::into),
            acceptance: s.acceptance,
            gate: s.gate,
        }
    }
}

impl From<wit::PlanRequest> for c::PlanRequest {
    fn from(r: wit::PlanRequest) -> Self {
        Self {
            cwd: r.cwd,
            mode: match r.mode {
                wit::Mode::Single => c::Mode::Single,
                wit::Mode::Chain => c::Mode::Chain,
                wit::Mode::Parallel => c::Mode::Parallel,
            },
            steps: r.steps.into_iter().map(Into::into).collect(),
            agents: r.agents.into_iter().map(Into::into).collect(),
            parent_model: r.parent_model.map(|p| c::ParentModel {
                provider: p.provider,
                id: p.id,
            }),
            current_model_provider: r.current_model_provider,
            available_models: r
                .available_models
                .map(|models| models.into_iter().map(Into::into).collect()),
            scoped_models: r.scoped_models,
            model_scopes: r.model_scopes.map(|scopes| {
                scopes
                    .into_iter()
                    .map(|s| c::ModelScope {
                        allow: s.allow.map(Into::into),
                        enforce: s.enforce,
                        origin: s.origin,
                        strict: s.strict,
                        agent: s.agent,
                    })
                    .collect()
            }),
            thinking_ceiling: r.thinking_ceiling.map(Into::into),
            inherited_thinking_ceiling: r.inherited_thinking_ceiling.map(Into::into),
            launch: r.launch.map(|l| c::LaunchOptions {
                machine: l.machine.map(Into::into),
                cwd: l.cwd.map(Into::into),
                worktree: l.worktree,
                usage_budget: l.usage_budget.map(Into::into),
                checkpoint_before_deadline_ms: l.checkpoint_before_deadline_ms,
                native_schemas: l.native_schemas,
                native_models: l.native_models,
                permissions: l.permissions.map(Into::into),
                settings_permissions: l
                    .settings_permissions
                    .map(|all| all.into_iter().map(Into::into).collect()),
                sandbox: l.sandbox.map(Into::into),
                acceptance: l.acceptance,
                gate: l.gate,
            }),
            machine_catalog: r.machine_catalog.map(Into::into),
            machine_settings: r.machine_settings.map(|s| c::MachineSettings {
                user: s.user,
                project: s.project,
            }),
            platform: r.platform,
            settings_sandbox: r.settings_sandbox.map(|all| all.into_iter().map(Into::into).collect()),
            sandbox_host: r.sandbox_host.map(|h| c::SandboxHost {
                home: h.home,
                tmpdir: h.tmpdir,
                codex_home: h.codex_home,
                cache_home: h.cache_home,
                config_home: h.config_home,
                claude_config_dir: h.claude_config_dir,
                pi_agent_dir: h.pi_agent_dir,
            }),
            ceilings: r.ceilings.map(|all| all.into_iter().map(Into::into).collect()),
        }
    }
}

impl From<c::ThinkingLevel> for wit::ThinkingLevel {
    fn from(level: c::ThinkingLevel) -> Self {
        match level {
            c::ThinkingLevel::Off => Self::Off,
            c::ThinkingLevel::Minimal => Self::Minimal,
            c::ThinkingLevel::Low => Self::Low,
            c::ThinkingLevel::Medium => Self::Medium,
            c::ThinkingLevel::High => Self::High,
            c::ThinkingLevel::Xhigh => Self::Xhigh,
            c::ThinkingLevel::Max => Self::Max,
        }
    }
}

impl From<c::GraphNode> for wit::GraphNode {
    fn from(n: c::GraphNode) -> Self {
        Self {
            agent: n.agent,
            output_schema: n.output_schema,
            structured: n.structured,
        }
    }
}

impl From<c::PlanStep> for wit::PlanStep {
    fn from(s: c::PlanStep) -> Self {
        Self {
            agent: s.agent,
            step_index: s.step_index,
            task_index: s.task_index,
            task: s.task,
            model: s.model,
            requested_model: s.requested_model,
            model_origin: s.model_origin.map(|origin| match origin {
                c::ModelOrigin::Explicit => wit::ModelOrigin::Explicit,
                c::ModelOrigin::Configured => wit::ModelOrigin::Configured,
                c::ModelOrigin::Inherited => wit::ModelOrigin::Inherited,
            }),
            thinking: s.thinking.map(Into::into),
            thinking_ceiling: s.thinking_ceiling.map(Into::into),
            context_limit: s.context_limit,
            machine: s.machine.map(|m| wit::MachineRef {
                provider: m.provider,
                id: m.id,
                label: m.label,
                target: m.target,
                session: m.session,
                cwd: m.cwd,
            }),
            cwd: s.cwd,
            requested_cwd: s.requested_cwd,
            output_schema: s.output_schema,
            structured: s.structured,
            worktree: s.worktree,
            reads: s.reads,
            output: s.output,
            output_name: s.output_name,
            label: s.label,
            phase: s.phase,
            usage_budget: s.usage_budget.map(Into::into),
            tool_budget: s.tool_budget,
            retry: s.retry.map(Into::into),
            extensions: s.extensions,
            required_extensions: s.required_extensions,
            skills: s.skills,
            checkpoint_before_deadline_ms: s.checkpoint_before_deadline_ms,
            permissions: s.permissions.map(|p| wit::ResolvedPermissions {
                tools: p.tools,
                exclude_tools: p.exclude_tools,
                allow: p.allow,
                deny: p.deny,
                mode: p.mode.into(),
                nested: p.nested,
                max_depth: p.max_depth,
                nested_agents: p.nested_agents,
                nested_models: p.nested_models,
            }),
            sandbox: s.sandbox.map(Into::into),
            acceptance: s.acceptance.map(Into::into),
            cluster: s.cluster.map(|c| wit::ClusterRef {
                engine: c.engine,
                name: c.name,
                partition: c.partition,
                account: c.account,
                qos: c.qos,
                time_limit_minutes: c.time_limit_minutes,
                cpus: c.cpus,
                memory: c.memory,
                shared_dir: c.shared_dir,
            }),
        }
    }
}

impl From<c::LaunchPlan> for wit::LaunchPlan {
    fn from(p: c::LaunchPlan) -> Self {
        Self {
            steps: p.steps.into_iter().map(Into::into).collect(),
            graph: p.graph.map(|g| wit::Graph {
                steps: g
                    .steps
                    .into_iter()
                    .map(|step| match step {
                        c::GraphStep::Sequential(node) => wit::GraphStep::Sequential(node.into()),
                        c::GraphStep::Parallel(nodes) => {
                            wit::GraphStep::Parallel(nodes.into_iter().map(Into::into).collect())
                        }
                    })
                    .collect(),
            }),
            warnings: p.warnings,
            usage_budget: p.usage_budget.map(Into::into),
            reviewers: p
                .reviewers
                .into_iter()
                .map(|r| wit::PlannedReviewer {
                    review_of: r.review_of,
                    step: r.step.into(),
                })
                .collect(),
        }
    }
}

impl From<wit::SandboxSetting> for c::SandboxSetting {
    fn from(s: wit::SandboxSetting) -> Self {
        Self {
            profile: s.profile,
            ports: s.ports,
            best_effort: s.best_effort,
            origin: s.origin,
        }
    }
}

impl From<c::SandboxPlan> for wit::SandboxPlan {
    fn from(s: c::SandboxPlan) -> Self {
        Self {
            profile: match s.profile {
                c::SandboxProfile::None => wit::SandboxProfile::None,
                c::SandboxProfile::Workspace => wit::SandboxProfile::Workspace,
                c::SandboxProfile::Offline => wit::SandboxProfile::Offline,
                c::SandboxProfile::ReadOnly => wit::SandboxProfile::ReadOnly,
            },
            ports: s.ports,
            best_effort: s.best_effort,
            write_workdir: s.write_workdir,
            state_paths: s.state_paths,
            hidden: s.hidden,
            temp_base: s.temp_base,
            sources: s.sources,
        }
    }
}

impl From<c::AcceptancePlan> for wit::AcceptancePlan {
    fn from(a: c::AcceptancePlan) -> Self {
        Self {
            level: match a.level {
                c::AcceptanceLevel::None => wit::AcceptanceLevel::None,
                c::AcceptanceLevel::Attested => wit::AcceptanceLevel::Attested,
                c::AcceptanceLevel::Checked => wit::AcceptanceLevel::Checked,
                c::AcceptanceLevel::Verified => wit::AcceptanceLevel::Verified,
            },
            explicit: a.explicit,
            origin: a.origin,
            report: a.report,
            criteria: a
                .criteria
                .into_iter()
                .map(|c| wit::Criterion { id: c.id, must: c.must })
                .collect(),
            evidence: a
                .evidence
                .into_iter()
                .map(|kind| match kind {
                    c::EvidenceKind::ChangedFiles => wit::EvidenceKind::ChangedFiles,
                    c::EvidenceKind::TestsAdded => wit::EvidenceKind::TestsAdded,
                    c::EvidenceKind::CommandsRun => wit::EvidenceKind::CommandsRun,
                    c::EvidenceKind::ValidationOutput => wit::EvidenceKind::ValidationOutput,
                    c::EvidenceKind::ResidualRisks => wit::EvidenceKind::ResidualRisks,
                    c::EvidenceKind::NoStagedFiles => wit::EvidenceKind::NoStagedFiles,
                    c::EvidenceKind::DiffSummary => wit::EvidenceKind::DiffSummary,
                    c::EvidenceKind::ReviewFindings => wit::EvidenceKind::ReviewFindings,
                    c::EvidenceKind::ManualNotes => wit::EvidenceKind::ManualNotes,
                })
                .collect(),
            verify: a
                .verify
                .into_iter()
                .map(|v| wit::VerifyCommand {
                    id: v.id,
                    command: v.command,
                    timeout_ms: v.timeout_ms,
                    json: v.json,
                    schema: v.schema,
                })
                .collect(),
            review: a.review.map(|r| wit::ReviewGate {
                agent: r.agent,
                required: r.required,
            }),
            reason: a.reason,
        }
    }
}

impl From<c::PlanError> for wit::PlanError {
    fn from(e: c::PlanError) -> Self {
        use c::ErrorCode as C;
        use wit::ErrorCode as W;
        let code = match e.code {
            C::InvalidRequest => W::InvalidRequest,
            C::UnknownAgent => W::UnknownAgent,
            C::UnknownModel => W::UnknownModel,
            C::AmbiguousModel => W::AmbiguousModel,
            C::ModelOutOfScope => W::ModelOutOfScope,
            C::NoParentModel => W::NoParentModel,
            C::InvalidThinkingLevel => W::InvalidThinkingLevel,
            C::ThinkingAboveCeiling => W::ThinkingAboveCeiling,
            C::RunnerOptionUnsupported => W::RunnerOptionUnsupported,
            C::StructuredOutputUnsupported => W::StructuredOutputUnsupported,
            C::InvalidOutputSchema => W::InvalidOutputSchema,
            C::InvalidMachineName => W::InvalidMachineName,
            C::MachineNotFound => W::MachineNotFound,
            C::MachineDisabled => W::MachineDisabled,
            C::MachineAmbiguous => W::MachineAmbiguous,
            C::MachineRunnerUnsupported => W::MachineRunnerUnsupported,
            C::MachineNoRoot => W::MachineNoRoot,
            C::InvalidMachineSettings => W::InvalidMachineSettings,
            C::InvalidMachineCatalog => W::InvalidMachineCatalog,
            C::UnsafeSshTarget => W::UnsafeSshTarget,
            C::InvalidRemoteCwd => W::InvalidRemoteCwd,
            C::AboveCeiling => W::AboveCeiling,
            C::PlannerFault => W::PlannerFault,
        };
        Self {
            code,
            message: e.message,
        }
    }
}
