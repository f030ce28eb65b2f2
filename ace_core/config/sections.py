"""The settings of each part of a run, declared once: SAC, the LLM actor, the LLM critic, LoRA,
the imitation start, the expert anchor, the expert teacher and validation.

:class:`~ace_core.config.run.TrainConfig` holds one of each. A field that the CLI and the web form
show carries its flat name (``flat("actor_rounds", 5)``): the name of its flag and form field, and
of its key in a run's flat settings. Fields without one are settings of the code (tests and
benchmarks change them), stored in checkpoints with the rest but not offered as flags.

Each section has a ``title``: the group its flat settings are shown under (the web form's
fieldsets). A field may name another group (``flat("imitation", 0.0, group=ACE)``: a term of the
SAC loss that only the LLM loop uses), and TrainConfig's own fields name theirs with
:func:`grouped`; :data:`GROUPS` puts the groups in page order.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from ace_core.config.checks import CRITIC_FORMATS, MAX_LABELS, TRAJECTORY_SELECTIONS
from ace_core.errors import ConfigError

ENVIRONMENT = "Environment"
TRAINING = "Training"
BUDGET = "Budget"
VALIDATION = "Validation"
IMITATION = "Imitation start"
ANCHOR = "Expert anchor"
TEACHER = "Expert teacher"
ACE = "LLM co-evolution (ACE)"
GROUPS = (ENVIRONMENT, TRAINING, BUDGET, VALIDATION, IMITATION, ANCHOR, TEACHER, ACE)
"""the titles the flat settings are shown under (the sections' and those of TrainConfig's own
fields), in page order"""


def flat(name: str, default: Any, *, group: str = "") -> Any:
    """A field shown as a flag and a form field under ``name`` (in ``group``, when it is not
    shown with the rest of its section)."""
    metadata = {"flat": name, "group": group} if group else {"flat": name}
    return dataclasses.field(default=default, metadata=metadata)


def grouped(group: str, default: Any) -> Any:
    """One of TrainConfig's own fields, shown in ``group`` (unmarked ones are :data:`TRAINING`'s)."""
    return dataclasses.field(default=default, metadata={"group": group})


@dataclass
class SACConfig:
    title: ClassVar[str] = TRAINING

    head: str = flat("head", "auto")
    """policy/Q head: flat (one output per action), factorised (substation then bus bits) or auto"""
    hidden: int = flat("hidden", 256)
    """width of the hidden layers"""
    gamma: float = flat("gamma", 0.99)
    """discount factor per agent decision"""
    tau: float = flat("tau", 0.005)
    """target network smoothing coefficient"""
    policy_lr: float = flat("policy_lr", 3e-4)
    """actor learning rate"""
    q_lr: float = flat("q_lr", 3e-4)
    """critic learning rate"""
    target_entropy_scale: float = flat("target_entropy_scale", 0.25)
    """target entropy = scale * log(number of legal actions), CleanRL-style"""
    init_alpha: float = flat("init_alpha", 1.0)
    """the temperature at the first update (a cloned policy is sharp: a small start keeps the entropy bonus from flattening it)"""
    actor_delay: int = flat("actor_delay", 0)
    """SAC updates during which only the critics learn, the actor and temperature held: a policy started from imitation stays itself until the critics know its values"""
    imitation: float = flat("imitation", 0.0, group=ACE)
    """weight of a behaviour-cloning term on the LLM buffer's rows, priority * -log pi(a_llm | s), added to the policy loss (0: off, the paper's weighted policy loss alone)"""
    anchor: float = flat("anchor", 0.0, group=ANCHOR)
    """weight of a behaviour-cloning term on the expert's mined decisions (anchor_mine), anchor * -log pi(a_expert | s) over a batch of them at every actor update, added to the policy loss: keeps a cloned policy near the expert while RL moves it (0: off)"""
    anchor_action_weight: float = flat("anchor_action_weight", 1.0, group=ANCHOR)
    """how many times each real action (not do-nothing) counts in the anchor term's mean: an expert that mostly waits teaches waiting, and not when to stop (ace_core/rl/cloning.py; 1: every decision alike)"""
    conservative: float = flat("conservative", 0.0)
    """weight of CQL's conservative term (Kumar et al. 2020), conservative * (log sum_a exp Q(s, a) - Q(s, a_taken)), added to each critic's loss: pushes down the values of actions the run never took, so the actor is not drawn to the critics' over-estimates (0: off)"""
    max_grad_norm: float = 10.0
    """gradient norm clipping for actor and critics (keeps Q from running away early)"""


@dataclass
class ActorConfig:
    title: ClassVar[str] = ACE

    rounds: int = flat("actor_rounds", 5)
    """choose-simulate-retry rounds per refinement"""
    candidates: int = flat("actor_candidates", 6)
    """candidate actions listed to the LLM actor (policy top-k, then topologies near loaded lines)"""
    policy_top_k: int = 3
    """of which at most this many come from the policy's most likely actions"""
    loaded_lines: int = 3
    """the rest are topologies at the ends of this many most loaded lines (and reconnections)"""
    calibrate: bool = flat("llm_calibrate", False)
    """the actor chooses by log p(letter | prompt) - log p(letter | content-free prompt) (contextual calibration, Zhao et al. 2021): removes a model's letter bias; off by default because on held-out cases it lowered the acceptance (docs/ace.md)"""
    answer: str = flat("actor_answer", "text")
    """how the LLM actor names its choice: text (options listed unlabelled; each option's own text is scored as the answer, so fine-tuning learns actions, not positions) or letter (options labelled A, B, ...; the answer's letter is scored)"""


@dataclass
class CriticConfig:
    title: ClassVar[str] = ACE

    k: float = flat("shaping_k", 0.1)
    """K of the critic's adjustments {-2K, -K, +K, +2K}"""
    threshold: float = flat("critic_threshold", 0.5)
    """the critic only reads episodes with a decision whose step reward has |r| above this"""
    selection: str = flat("trajectory_selection", "reward")
    """how the critic picks trajectories: reward, state or action"""
    max_steps_shown: int = 30
    """decisions shown to the LLM (the most extreme ones and the last ones, in step order)"""
    max_key_steps: int = 5
    """adjustments applied per trajectory at most"""
    max_new_tokens: int = 96
    """length of the LLM's reply"""
    prefill: bool = True
    """json format: start the reply with '{"key_steps": [' (local models; servers may not continue a prefill; a run sets it from its backend)"""
    format: str = flat("critic_format", "choice")
    """how the critic answers: choice (per key step, two scored letter questions: which decision, which adjustment; always valid) or json (one free reply in strict JSON with a rationale; for capable models, a 135M one never manages it)"""
    choice_key_steps: int = flat("critic_key_steps", 1)
    """choice format: key steps asked per trajectory (two LLM calls each)"""

    def validate(self) -> CriticConfig:
        if self.selection not in TRAJECTORY_SELECTIONS:
            raise ConfigError(
                f"trajectory selection {self.selection!r}; accepted: {', '.join(TRAJECTORY_SELECTIONS)}"
            )
        if self.format not in CRITIC_FORMATS:
            raise ConfigError(f"critic format {self.format!r}; accepted: {', '.join(CRITIC_FORMATS)}")
        if not 1 <= self.choice_key_steps <= MAX_LABELS:
            raise ConfigError(f"choice_key_steps={self.choice_key_steps}; accepted: 1 to {MAX_LABELS}")
        return self

    def calls_per_trajectory(self) -> int:
        return 2 * self.choice_key_steps if self.format == "choice" else 1


@dataclass
class FinetuneConfig:
    """LoRA settings and the training budget of one fine-tuning round."""

    title: ClassVar[str] = ACE

    r: int = 8
    """LoRA rank (size of the low-rank update)"""
    alpha: int = 16
    """LoRA scaling numerator: the update is scaled by alpha / r"""
    dropout: float = 0.05
    """dropout on the LoRA branch during training"""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    """names of the linear layers that get a LoRA update (the attention projections)"""
    lr: float = 5e-4
    """AdamW learning rate of the LoRA weights"""
    epochs: int = 1
    """passes over the samples (one pass over 100 samples takes 4-10 min on one busy CPU core)"""
    max_steps: int = flat("finetune_max_steps", 0)
    """optimizer steps per LoRA round at most; 0 = one pass over the samples"""
    batch_size: int = 4
    """samples per optimizer step"""
    max_length: int = 512
    """tokens per sample; longer prompts lose their beginning (the answer is always kept)"""
    max_grad_norm: float = 1.0
    """gradient norm clipping"""
    eval_samples: int = 16
    """samples (the first ones) on which loss_before and loss_after are measured; 0 means all"""
    activation_checkpointing: bool = False
    """recompute activations in the backward pass: far less memory (7B models on one GPU), ~30% slower"""
    resume: bool = True
    """continue training the backend's current adapter (its rank and targets win) instead of a new one"""
    seed: int = 0
    """seed of the LoRA initialisation and of the sample order (a run sets it from its seed)"""

    def validate(self) -> FinetuneConfig:
        """Return self, or raise ConfigError naming the first bad field."""
        checks = [
            ("r", self.r, 1, 1024),
            ("alpha", self.alpha, 1, 4096),
            ("dropout", self.dropout, 0.0, 0.9),
            ("lr", self.lr, 1e-7, 1.0),
            ("epochs", self.epochs, 1, 1000),
            ("max_steps", self.max_steps, 0, 1_000_000),
            ("batch_size", self.batch_size, 1, 1024),
            ("max_length", self.max_length, 8, 1_000_000),
            ("max_grad_norm", self.max_grad_norm, 1e-6, 1e6),
            ("eval_samples", self.eval_samples, 0, 1_000_000),
            ("seed", self.seed, 0, 2**31 - 1),
        ]
        for name, value, low, high in checks:
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                raise ConfigError(
                    f"FinetuneConfig.{name}={value!r} is out of range; accepted: {low} to {high}"
                )
        if not self.target_modules or not all(isinstance(m, str) and m for m in self.target_modules):
            raise ConfigError(
                f"FinetuneConfig.target_modules={self.target_modules!r}: give module names such as q_proj, v_proj"
            )
        return self


@dataclass
class PretrainConfig:
    """The imitation start: behaviour cloning of the expert before RL (the ``pretrain_*`` settings)."""

    title: ClassVar[str] = IMITATION

    mine: str = flat("pretrain_mine", "")
    """start from behaviour cloning of the expert: a mine directory (`python -m ace_core mine`), auto to mine the train days first (cached: reused by every run with the same env, expert and seeds), or empty for no imitation start"""
    expert: str = flat("pretrain_expert", "greedy")
    """the expert that auto mines with (greedy, greedy:BUDGET or greedy:key=value,...)"""
    seeds: int = flat("pretrain_seeds", 2)
    """grid seeds each train day is mined with (auto)"""
    demand_scales: str = flat("pretrain_demand_scales", "")
    """with auto, also mine the train days heavier: demand scales, comma-separated (e.g. 1.05,1.1; each 0.8-1.3, ace_core/grid/demand.py); heavier days hold many more of the decisions where doing nothing overloads the grid, and the clone and the anchor learn from every mine; empty = the days as they are only"""
    opponent: str = flat("pretrain_opponent", "")
    """with auto, the line attacks of the mines of the days as they are and heavier: an opponent profile (env, none, random-line, storm; settings after a colon; ace_core/grid/opponents.py); empty = the run's own opponent. A run trained under the storm can so clone from the same mines as one trained on the days as the env plays them"""
    attacks: str = flat("pretrain_attacks", "")
    """with auto, also mine the train days under these line attacks: an opponent profile (storm, random-line; settings after a colon, e.g. storm:cooldown=36; ace_core/grid/opponents.py), for a policy that has seen what an attack leaves to repair; empty = the run's own opponent only"""
    attack_seeds: int = flat("pretrain_attack_seeds", 0)
    """with pretrain_attacks, grid seeds each train day is mined with under those attacks (each seed draws other attacks, so more seeds show the clone and the anchor more of what an attack leaves to repair); 0 = pretrain_seeds"""
    epochs: int = flat("pretrain_epochs", 30)
    """behaviour-cloning epochs over the mined expert decisions"""
    moves: int = flat("pretrain_moves", 0)
    """the policy also plays this many discrete forms of the continuous moves the expert played (redispatch, curtailment, storage; the most frequent in the mines, ace_core/grid/flex/discrete.py), cloned and trained like its topology actions; needs mines of an expert with flex (e.g. pretrain_expert=greedy:threshold=0.8,flex=4); 0 = topology only"""
    move_labels: str = flat("pretrain_move_labels", "all")
    """with pretrain_moves, the decisions a move is learned at: all (wherever the expert played one) or alone (only where it played no topology action with it)"""

    def mines_opponent(self, run_opponent: str) -> str:
        """The opponent of the auto mines of the days as they are and heavier."""
        return self.opponent or run_opponent

    def attacks_mine_seeds(self) -> int:
        """The grid seeds of the attacked days' mine (``pretrain_attacks``)."""
        return self.attack_seeds or self.seeds

    def scales(self) -> tuple[float, ...]:
        """The demand scales auto mines at: 1.0 (the days as they are), then ``demand_scales``."""
        scales = demand_scales("pretrain_demand_scales", self.demand_scales)
        if 1.0 in scales:
            raise ConfigError(
                "pretrain_demand_scales: 1.0 is given (the days as they are are always mined); give "
                "scales other than 1, e.g. 1.05,1.1"
            )
        return (1.0, *scales)


def demand_scales(setting: str, text: str) -> tuple[float, ...]:
    """The distinct demand scales of a comma-separated ``text`` (each 0.8-1.3,
    :mod:`ace_core.grid.demand`), in its order; an error naming ``setting`` otherwise."""
    from ace_core.grid.demand import check_demand_scale

    scales: list[float] = []
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            value = float(part)
        except ValueError:
            value = part.strip()
        try:
            scale = check_demand_scale(value)
        except ConfigError as exc:
            raise ConfigError(f"{setting}: {exc}") from None
        if scale in scales:
            raise ConfigError(f"{setting}: {scale} is given twice; give distinct scales, e.g. 1.05,1.1")
        scales.append(scale)
    return tuple(scales)


@dataclass
class AnchorConfig:
    """The mines of the expert anchor, a behaviour-cloning term kept on during RL (its weights,
    ``anchor`` and ``anchor_action_weight``, are the SAC loss's: :class:`SACConfig`)."""

    title: ClassVar[str] = ANCHOR

    mine: str = flat("anchor_mine", "")
    """mine directories (comma-separated) whose expert decisions the anchor term clones during RL; empty = the run's pretrain_mine"""

    def mines(self, pretrain_mine: str) -> list[str]:
        """The mines the anchor term clones: ``mine``'s, else the run's pretrain mine."""
        if self.mine:
            return [part.strip() for part in self.mine.split(",") if part.strip()]
        return [pretrain_mine] if pretrain_mine else []


@dataclass
class TeacherConfig:
    """Expert-guided exploration: some decisions play the simulated expert's action (``teacher_*``)."""

    title: ClassVar[str] = TEACHER

    prob: float = flat("teacher_prob", 0.0)
    """probability that a decision at step 0 plays the simulated expert's action instead of the policy's; it falls linearly to 0 at teacher_steps (0 = off). The expert's transitions enter the same replay buffer"""
    steps: int = flat("teacher_steps", 20_000)
    """environment steps over which teacher_prob falls to 0 (counted from step 0, so a resume that extends --steps keeps the schedule)"""
    top_k: int = flat("teacher_top_k", 4)
    """the expert simulates reconnect-or-nothing, the policy's k most likely actions ..."""
    budget: int = flat("teacher_budget", 16)
    """... and this many greedy candidates (reconnections, topologies at the ends of the most loaded lines), and plays the lowest simulated max rho"""
    anchor: bool = flat("teacher_anchor", False)
    """the teacher's decisions join the anchor term's mined ones (needs anchor > 0): with teacher_budget 0 the policy clones what simulating its own top k chose, on the states the run reaches"""


@dataclass
class ValidationConfig:
    """How the best policy is chosen during training (``validate_every``, ``validation_*``)."""

    title: ClassVar[str] = VALIDATION

    every: int = flat("validate_every", 0)
    """agent decisions between validations: the plain policy plays the validation days, and the best one is kept as best.pt, which evaluation and deployment use (0 = no validation: the last policy)"""
    seeds: int = flat("validation_seeds", 1)
    """grid seeds each validation day is played with"""
    demand_scale: float = flat("validation_demand_scale", 1.0)
    """also play the validation days with every load and production multiplied by this (0.8-1.3; ace_core/grid/demand.py), a harder test of the same days; the mean survival over both chooses best.pt (1.0 = the days as they are only)"""
    opponent: str = flat("validation_opponent", "")
    """also play the validation days under these line attacks: an opponent profile (random-line, storm; settings after a colon, ace_core/grid/opponents.py), so a run that trains under attacks chooses best.pt on attacked days too; the mean survival over every copy decides, or this copy's alone with validation_decides=attacks (empty = no attacked copy)"""
    attack_seeds: int = flat("validation_attack_seeds", 0)
    """grid seeds each validation day is played with under validation_opponent's attacks (0 = validation_seeds): an attacked day's survival varies with the attacks drawn, so a choice on the attacked copy needs more episodes than the days as they are (in the mean over every copy each episode counts once, so more seeds weigh the attacked copy more)"""
    uneven: str = flat("validation_uneven", "")
    """also play the validation days heavier and uneven, as the stress table's uneven rows: demand scales, comma-separated (e.g. 1.05,1.1,1.15; each 0.8-1.3), each copy with every load's share of the demand drawn from the grid seed and the day (ace_core/grid/demand.py), on validation_uneven_seeds grid seeds: where a grid has no opponent nor maintenance, a heavier day is the same under every seed, and these are not; empty = none"""
    uneven_seeds: int = flat("validation_uneven_seeds", 5)
    """grid seeds each validation day is played with in each uneven copy (validation_uneven)"""
    decides: str = flat("validation_decides", "mean")
    """which survival chooses best.pt: mean (over every copy played), attacks (the copy under validation_opponent alone, for a policy meant for attacked grids) or uneven (the uneven copies' mean, validation_uneven, for a policy meant for heavier days)"""
    floor: float = flat("validation_floor", 0.0)
    """a policy must survive at least this share of the validation days as they are to be kept as best.pt over one that does (0-1; 0 = no floor): with decides=attacks or uneven, a policy for attacked grids or heavier days that still holds ordinary days"""
    keep: bool = flat("validation_keep", False)
    """also keep every validated policy, as validated/decisions-N.pt in the run directory (a policy file like best.pt, about as large): to compare a run's policies with experiment table, or to choose again on more episodes than the run's validation played"""

    def uneven_scales(self) -> tuple[float, ...]:
        """The demand scales of the uneven copies (``validation_uneven``)."""
        return demand_scales("validation_uneven", self.uneven)
