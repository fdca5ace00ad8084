"""A gemmforge CuTe DSL row op's configuration (rowops.py builds it): how many threads share a row,
how many 16-byte vectors each holds, how many CTAs split it, what the kernel asks for and launches,
and which configurations it builds. Host-side only: no DSL import."""
from dataclasses import dataclass


REGISTERS_PER_SM = 65536
# Registers a thread needs besides the row's words: addresses, indices, predicates, statistics
# (the 1024-thread configs, capped at 64, compile without spills within it; ptxas -v).
REGISTER_OVERHEAD = 32


def register_cap(threads: int) -> int:
    """The most registers ptxas gives a thread of a CTA of `threads` (the DSL emits .reqntid)."""
    return min(255, REGISTERS_PER_SM // threads // 8 * 8)


@dataclass(frozen=True)
class RowConfig:
    kind: str = "softmax"  # softmax | rmsnorm
    threads: int = 256  # CTA size: 128, 256, 512 or 1024
    rows_per_cta: int = 1  # row groups of threads / rows_per_cta threads each
    vec: int = 8  # elements of one 16-byte access of the input: 8 (16-bit), 4 (fp32)
    iters: int = 4  # vectors a thread holds, 1..16
    cluster: int = 1  # CTAs splitting one row: 1, 2, 4 or 8 (rows_per_cta 1 then)
    residual: bool = False  # rmsnorm: h = x + residual (rounded to the input dtype) is normed and written out
    valid_len: bool = False  # softmax: elements at or past valid_len[row] are -inf, their output 0

    @property
    def group(self) -> int:
        """Threads that share one row (of this CTA's part)."""
        return self.threads // self.rows_per_cta

    @property
    def group_warps(self) -> int:
        """Warps of one group (1 for groups under a warp: several groups share a warp)."""
        return max(1, self.group // 32)

    @property
    def part_cols(self) -> int:
        """Columns one CTA's part of a row holds at most."""
        return self.group * self.vec * self.iters

    @property
    def max_cols(self) -> int:
        return self.part_cols * self.cluster

    @property
    def values_per_thread(self) -> int:
        return self.vec * self.iters

    @property
    def stat_words(self) -> int:
        """fp32 words of a partial statistic: softmax's (max, sum), RMSNorm's sum of squares."""
        return 2 if self.kind == "softmax" else 1

    def smem_bytes(self) -> int:
        """Shared memory the kernel asks for (under 1 KiB): its mbarrier (used with cluster > 1),
        a slot per warp of each group for the warps' partials and one per cluster CTA."""
        return 8 + 4 * self.stat_words * (self.rows_per_cta * self.group_warps + self.cluster)

    def grid(self, rows: int) -> int:
        """CTAs of a launch over `rows` rows."""
        return -(-rows // self.rows_per_cta) * self.cluster

    def holds_fp32(self) -> bool:
        """Whether the row's values fit the registers in fp32 (with room to spare). Softmax then
        keeps its exponentials (one an element), else takes them again for the output; RMSNorm
        keeps the row as loaded (the input dtype) either way."""
        return self.values_per_thread + REGISTER_OVERHEAD <= register_cap(self.threads)

    def check(self, in_dtype=None):
        """Raises ValueError for a configuration the kernel does not build."""
        def pow2(n):
            return n > 0 and n & (n - 1) == 0

        if self.kind not in ("softmax", "rmsnorm"):
            raise ValueError(f"kind must be softmax or rmsnorm, not {self.kind!r}")
        if self.threads not in (128, 256, 512, 1024):
            raise ValueError(f"threads must be 128, 256, 512 or 1024, not {self.threads}")
        if not pow2(self.rows_per_cta) or self.group < 8:
            raise ValueError(f"rows_per_cta must be a power of two leaving groups of 8 threads or more, "
                             f"not {self.rows_per_cta} of {self.threads}")
        if self.vec not in (4, 8) or (in_dtype is not None and self.vec * in_dtype.width != 128):
            raise ValueError(f"vec must make a 16-byte vector of the input, not {self.vec}")
        if not 1 <= self.iters <= 16:
            raise ValueError(f"iters must be 1..16, not {self.iters}")
        if self.cluster not in (1, 2, 4, 8):
            raise ValueError(f"cluster must be 1, 2, 4 or 8, not {self.cluster}")
        if self.cluster > 1 and self.rows_per_cta != 1:
            raise ValueError("a cluster splits one row: rows_per_cta must be 1")
        if self.residual and self.kind != "rmsnorm":
            raise ValueError("residual is rmsnorm's")
        if self.valid_len and self.kind != "softmax":
            raise ValueError("valid_len is softmax's")
        # The row as loaded (and the residual, loaded with it before they are added).
        width = 32 if in_dtype is None else in_dtype.width
        words = self.values_per_thread * width // 32 * (2 if self.residual else 1)
        if words + REGISTER_OVERHEAD > register_cap(self.threads):
            raise ValueError(f"{words} words of row values a thread do not fit the "
                             f"{register_cap(self.threads)} registers of {self.threads}-thread CTAs")
