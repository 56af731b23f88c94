// kagent's CPU emulator, second half: included after the kernel's source with KG_ENTRIES defined as
// X(entry) for each of the file's entries. The fiber scheduler, the request read from stdin and the
// buffers written to stdout. The process locks itself into seccomp's strict mode before anything of
// the kernel's runs (read, write and exit only): untrusted code gets no file, network or process.
#undef printf
#include <cstdarg>
#include <cstdio>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef KG_ARENA_BYTES
#define KG_ARENA_BYTES (3ull << 30)
#endif
#define KG_MAX_THREADS 1024
#define KG_STACK_BYTES (256u << 10)
#define KG_DYNAMIC_SMEM_BYTES (228u << 10)

kg_fiber* kg_cur;
dim3 kg_block_idx, kg_block_dim, kg_grid_dim;
unsigned long long kg_exchange[32][32];
unsigned char kg_lane_live[32][32];
unsigned long long kg_clock;
int kg_block_count;
alignas(256) unsigned char kg_dynamic_smem[KG_DYNAMIC_SMEM_BYTES];

static unsigned char* kg_arena;   // mapped before the lock: afterwards no memory can be asked for
static unsigned char* kg_stacks;  // KG_MAX_THREADS stacks of KG_STACK_BYTES
static kg_fiber kg_fibers[KG_MAX_THREADS];
static void* kg_scheduler_sp;
typedef void (*kg_thunk)(void**);
static kg_thunk kg_running;
static void** kg_running_args;
static size_t kg_log_left = 64 << 10;

static void kg_write(int fd, const void* data, size_t n) {
    const char* p = (const char*)data;
    while (n) {
        long w = syscall(SYS_write, fd, p, n);
        if (w <= 0) syscall(SYS_exit, 8);
        p += w; n -= (size_t)w;
    }
}
static void kg_read(void* data, size_t n) {
    char* p = (char*)data;
    while (n) {
        long r = syscall(SYS_read, 0, p, n);
        if (r <= 0) syscall(SYS_exit, 7);
        p += r; n -= (size_t)r;
    }
}
static void kg_say(const char* text) { kg_write(2, text, std::strlen(text)); }

void kg_fail(int code, const char* what) {
    kg_say("kagent-emulator: ");
    kg_say(what);
    kg_say("\n");
    syscall(SYS_exit, code);
    __builtin_unreachable();
}

int kg_printf(const char* format, ...) {
    char line[512];
    va_list ap;
    va_start(ap, format);
    int n = std::vsnprintf(line, sizeof line, format, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (len > kg_log_left) len = kg_log_left;
    kg_log_left -= len;
    if (len) kg_write(2, line, len);
    return n;
}

__attribute__((constructor(101))) static void kg_lock_down() {
    const int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    void* arena = mmap(nullptr, KG_ARENA_BYTES, prot, flags, -1, 0);
    void* stacks = mmap(nullptr, (size_t)KG_MAX_THREADS * KG_STACK_BYTES, prot, flags, -1, 0);
    if (arena == MAP_FAILED || stacks == MAP_FAILED) {
        kg_say("kagent-emulator: cannot map the arena\n");
        syscall(SYS_exit, 10);
    }
    kg_arena = (unsigned char*)arena;
    kg_stacks = (unsigned char*)stacks;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) {
        kg_say("kagent-emulator: seccomp strict mode is not available\n");
        syscall(SYS_exit, 9);
    }
}

// Fibers: a stack switch that saves the callee-saved registers (x86-64 System V).
extern "C" void kg_switch(void** save_sp, void* load_sp);
asm(R"(
.text
.globl kg_switch
.type kg_switch,@function
kg_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size kg_switch, .-kg_switch
)");

static void kg_fiber_start() {
    kg_running(kg_running_args);
    kg_cur->state = 3;
    kg_lane_live[kg_cur->warp][kg_cur->lane] = 0;
    kg_switch(&kg_cur->sp, kg_scheduler_sp);
    __builtin_unreachable();
}

void kg_wait(int kind, unsigned mask) {
    kg_cur->state = kind;
    kg_cur->mask = mask;
    kg_switch(&kg_cur->sp, kg_scheduler_sp);
}

static void kg_prepare(unsigned i) {
    uintptr_t top = ((uintptr_t)(kg_stacks + (size_t)(i + 1) * KG_STACK_BYTES)) & ~(uintptr_t)15;
    void** sp = (void**)top;
    *--sp = nullptr;                      // where kg_fiber_start would return to: it never does
    *--sp = (void*)&kg_fiber_start;       // kg_switch's ret enters it with the stack aligned as a call would
    for (int r = 0; r < 6; ++r) *--sp = nullptr;
    kg_fibers[i].sp = sp;
    kg_fibers[i].state = 0;
}

// One block: run every runnable fiber until it waits or ends, then release a barrier every live thread
// (or every live lane of a warp) has reached. Threads waiting at different barriers: the kernel's fault.
static void kg_run_block(unsigned threads, bool reverse) {
    for (unsigned i = 0; i < threads; ++i) {
        kg_fibers[i].tid = uint3{i % kg_block_dim.x, (i / kg_block_dim.x) % kg_block_dim.y,
                                i / (kg_block_dim.x * kg_block_dim.y)};
        kg_fibers[i].lane = i % 32;
        kg_fibers[i].warp = i / 32;
        kg_fibers[i].mask = 0xffffffffu;
        kg_prepare(i);
    }
    std::memset(kg_lane_live, 0, sizeof kg_lane_live);
    for (unsigned i = 0; i < threads; ++i) kg_lane_live[i / 32][i % 32] = 1;
    kg_block_count = (int)threads;
    for (;;) {
        for (unsigned k = 0; k < threads; ++k) {
            unsigned i = reverse ? threads - 1 - k : k;
            if (kg_fibers[i].state != 0) continue;
            kg_cur = &kg_fibers[i];
            kg_switch(&kg_scheduler_sp, kg_fibers[i].sp);
        }
        kg_cur = nullptr;
        unsigned done = 0, at_block = 0;
        for (unsigned i = 0; i < threads; ++i) {
            done += kg_fibers[i].state == 3;
            at_block += kg_fibers[i].state == 1;
        }
        if (done == threads) return;
        if (at_block == threads - done) {
            for (unsigned i = 0; i < threads; ++i)
                if (kg_fibers[i].state == 1) kg_fibers[i].state = 0;
            continue;
        }
        bool released = false;
        for (unsigned w = 0; w * 32 < threads; ++w) {
            unsigned waiting = 0, wanted = 0;
            for (unsigned l = 0; l < 32 && w * 32 + l < threads; ++l) {
                const kg_fiber& f = kg_fibers[w * 32 + l];
                if (f.state == 2) { waiting |= 1u << l; wanted |= f.mask; }
            }
            unsigned live = 0;
            for (unsigned l = 0; l < 32; ++l)
                if (kg_lane_live[w][l]) live |= 1u << l;
            if (waiting && (wanted & live & ~waiting) == 0) {
                for (unsigned l = 0; l < 32; ++l)
                    if (waiting >> l & 1u) kg_fibers[w * 32 + l].state = 0;
                released = true;
            }
        }
        if (!released)
            kg_fail(3, "the threads of a block wait at different barriers: a __syncthreads() or a warp operation "
                       "that not every thread reaches");
    }
}

template <class... A, std::size_t... I>
static void kg_invoke_with(void (*f)(A...), void** a, std::index_sequence<I...>) {
    f(*reinterpret_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(a[I])...);
}
template <class... A> static void kg_invoke(void (*f)(A...), void** a) {
    if (sizeof...(A) > 64) kg_fail(6, "more than 64 kernel parameters");
    kg_invoke_with(f, a, std::index_sequence_for<A...>{});
}

static const kg_thunk kg_entries[] = {
#define X(name) [](void** a) { kg_invoke(&name, a); },
    KG_ENTRIES
#undef X
};

struct kg_header { unsigned magic, order, buffers, launches; };
struct kg_launch { unsigned entry, grid[3], block[3], args; unsigned long long smem; };
struct kg_arg { unsigned long long kind, a, b; };  // kind 0: buffer a at byte b; else a scalar of kind bytes in a

int main() {
    kg_header h;
    kg_read(&h, sizeof h);
    if (h.magic != 0x4d45474bu || h.buffers > 256) kg_fail(6, "bad request");
    unsigned long long sizes[256], offsets[256], used = 0;
    kg_read(sizes, 8ull * h.buffers);
    for (unsigned b = 0; b < h.buffers; ++b) {
        offsets[b] = used;
        used += (sizes[b] + 255) & ~255ull;
        if (used > KG_ARENA_BYTES) kg_fail(6, "the buffers exceed the emulator's arena");
        kg_read(kg_arena + offsets[b], sizes[b]);
    }
    unsigned long long storage[64];
    void* args[64];
    for (unsigned l = 0; l < h.launches; ++l) {
        kg_launch L;
        kg_read(&L, sizeof L);
        if (L.entry >= sizeof kg_entries / sizeof kg_entries[0] || L.args > 64) kg_fail(6, "bad launch");
        for (unsigned i = 0; i < L.args; ++i) {
            kg_arg A;
            kg_read(&A, sizeof A);
            if (A.kind == 0) {
                if (A.a >= h.buffers || A.b > sizes[A.a]) kg_fail(6, "bad buffer argument");
                unsigned char* p = kg_arena + offsets[A.a] + A.b;
                std::memcpy(&storage[i], &p, sizeof p);
            } else {
                storage[i] = A.a;
            }
            args[i] = &storage[i];
        }
        unsigned threads = L.block[0] * L.block[1] * L.block[2];
        if (threads == 0 || threads > KG_MAX_THREADS) kg_fail(6, "bad block");
        if (L.smem > KG_DYNAMIC_SMEM_BYTES) kg_fail(6, "more dynamic shared memory than the emulator holds");
        // The whole arena starts as 0xCD: what lies past the launch's size must still be 0xCD afterwards (a
        // write there is an illegal address on the GPU, where the block owns only L.smem bytes).
        std::memset(kg_dynamic_smem, 0xCD, KG_DYNAMIC_SMEM_BYTES);
        kg_block_dim = dim3{L.block[0], L.block[1], L.block[2]};
        kg_grid_dim = dim3{L.grid[0], L.grid[1], L.grid[2]};
        kg_running = kg_entries[L.entry];
        kg_running_args = args;
        unsigned long long blocks = 1ull * L.grid[0] * L.grid[1] * L.grid[2];
        bool reverse_blocks = h.order & 2u;
        for (unsigned long long k = 0; k < blocks; ++k) {
            unsigned long long b = reverse_blocks ? blocks - 1 - k : k;
            kg_block_idx = dim3{(unsigned)(b % L.grid[0]), (unsigned)((b / L.grid[0]) % L.grid[1]),
                                (unsigned)(b / (1ull * L.grid[0] * L.grid[1]))};
            kg_run_block(threads, h.order & 1u);
        }
        for (unsigned long long i = L.smem; i < KG_DYNAMIC_SMEM_BYTES; ++i) {
            if (kg_dynamic_smem[i] == 0xCD) continue;
            char what[96];
            std::snprintf(what, sizeof what, "byte %llu written; the launch has %llu bytes", i,
                          L.smem);
            kg_fail(10, what);
        }
    }
    unsigned done = 0x454e4f44u;
    for (unsigned b = 0; b < h.buffers; ++b) kg_write(1, kg_arena + offsets[b], sizes[b]);
    kg_write(1, &done, sizeof done);
    syscall(SYS_exit, 0);
}
