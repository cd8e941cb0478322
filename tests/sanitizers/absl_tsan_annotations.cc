// ThreadSanitizer annotations for Debian's prebuilt Abseil synchronization primitives.
//
// Debian's libabsl_synchronization.so is not built with -fsanitize=thread, so ThreadSanitizer
// cannot see absl::Mutex, absl::CondVar or absl::Notification create happens-before edges: every
// field guarded by an absl::Mutex would be reported as a data race, in our code and wherever
// gRPC (whose grpc_core::Mutex is an absl::Mutex) hands data to us. Suppressions cannot repair a
// missing edge, and Debian ships no Abseil sources to rebuild instrumented.
//
// This library, linked into every executable of a KDP_SANITIZE=thread build ahead of Abseil
// (cmake/kdp.cmake), interposes the out-of-line lock, unlock and wait functions of those three
// classes: each wrapper calls the real function (found with dlsym(RTLD_NEXT)) between the
// __tsan_mutex_* annotations that Abseil's own sources make when built with ThreadSanitizer
// (absl/base/internal/tsan_mutex_interface.h). Memory accesses inside the real function,
// including absl::Condition callbacks evaluated by whichever thread runs them, are ignored, as
// in an instrumented Abseil. Every caller reaches these functions through the PLT (executables,
// gRPC, and Abseil itself), so all of them see the annotated versions.
//
// ~Mutex is not annotated: gRPC destroys its mutexes after handing them between threads through
// its own (uninstrumented) atomics, which TSan would report as a destroy racing a lock. A mutex in
// our code destroyed while in use is still caught: freeing its memory is an instrumented write.
// The runs also need TSAN_OPTIONS=ignore_noninstrumented_modules=1 (CMakePresets.json), so that
// gRPC's own memcpy/new/free/sendmsg calls on its internal buffers are not checked either.
//
// Built only for thread-sanitized builds; never installed.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

#define KDP_STRINGIFY_INNER(x) #x
#define KDP_STRINGIFY(x) KDP_STRINGIFY_INNER(x)

// The Itanium-mangled name of absl::<rest>: "_ZN" ("_ZNK" for a const member function) + "4absl"
// + the inline namespace + `rest`, the mangled remainder, e.g. "5Mutex4LockEv".
std::string AbslSymbol(bool is_const, const char* rest) {
  std::string name = is_const ? "_ZNK4absl" : "_ZN4absl";
#if ABSL_OPTION_USE_INLINE_NAMESPACE
  const std::string ns = KDP_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  name += std::to_string(ns.size()) + ns;
#endif
  return name + rest;
}

// The next definition of absl::<rest> after this library (Abseil's own); aborts when there is
// none, since a silently missing wrapper would make every later report meaningless.
template <typename Fn>
Fn Real(bool is_const, const char* rest) {
  const std::string name = AbslSymbol(is_const, rest);
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "absl_tsan_annotations: %s not found: %s\n", name.c_str(), dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

// Declares `real`, the real function, resolved once per wrapper.
#define KDP_REAL(type, rest) static const auto real = Real<type>(false, rest)
#define KDP_REAL_CONST(type, rest) static const auto real = Real<type>(true, rest)

// The flags of the lock the calling thread holds on `mu`: Abseil keeps a writer bit (kMuWriter,
// 0x0008 in mutex.cc) in the mutex word, its only member.
unsigned HeldFlags(const absl::Mutex* mu) {
  static_assert(sizeof(absl::Mutex) == sizeof(std::atomic<intptr_t>));
  const auto* word = reinterpret_cast<const std::atomic<intptr_t>*>(mu);
  return (word->load(std::memory_order_relaxed) & 0x0008) != 0 ? 0 : __tsan_mutex_read_lock;
}

// Abseil calls some of these functions from others through its PLT (CondVar::WaitWithTimeout
// calls WaitWithDeadline, Notification::Notify calls Mutex::Lock, ...): only the outermost
// wrapper on a thread annotates, or one lock would be counted twice.
thread_local int wrapper_depth = 0;

class Outermost {
 public:
  Outermost() : outermost_(wrapper_depth++ == 0) {}
  ~Outermost() { --wrapper_depth; }
  Outermost(const Outermost&) = delete;
  Outermost& operator=(const Outermost&) = delete;

  // True when no other wrapper is running on this thread.
  bool is() const { return outermost_; }

 private:
  const bool outermost_;
};

// Runs `real` as a blocking lock acquisition of `mu` with `flags`.
template <typename F>
auto AnnotatedLock(const absl::Mutex* mu, unsigned flags, F real) {
  Outermost outer;
  if (!outer.is()) return real();
  void* m = const_cast<absl::Mutex*>(mu);
  __tsan_mutex_pre_lock(m, flags);
  auto result = real();
  __tsan_mutex_post_lock(m, flags, 0);
  return result;
}

// Runs `real`, which releases `mu` (held with `flags`), waits, and reacquires it (CondVar::Wait,
// Mutex::Await): a release then an acquisition, with the waiting itself ignored.
template <typename F>
auto AnnotatedRelock(const absl::Mutex* mu, unsigned flags, F real) {
  Outermost outer;
  if (!outer.is()) return real();
  void* m = const_cast<absl::Mutex*>(mu);
  __tsan_mutex_pre_unlock(m, flags);
  auto result = real();
  __tsan_mutex_post_unlock(m, flags);
  __tsan_mutex_pre_lock(m, flags);
  __tsan_mutex_post_lock(m, flags, 0);
  return result;
}

// Where Notification keeps notified_yet_, which the inline HasBeenNotified() loads with acquire
// order: the member after the Mutex.
void* NotifiedFlag(const absl::Notification* n) {
  static_assert(sizeof(absl::Notification) == 2 * sizeof(absl::Mutex));
  return const_cast<char*>(reinterpret_cast<const char*>(n) + sizeof(absl::Mutex));
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  KDP_REAL(void (*)(Mutex*), "5Mutex4LockEv");
  AnnotatedLock(this, 0, [&] { return (real(this), 0); });
}

void Mutex::ReaderLock() {
  KDP_REAL(void (*)(Mutex*), "5Mutex10ReaderLockEv");
  AnnotatedLock(this, __tsan_mutex_read_lock, [&] { return (real(this), 0); });
}

bool Mutex::TryLock() {
  KDP_REAL(bool (*)(Mutex*), "5Mutex7TryLockEv");
  Outermost outer;
  if (!outer.is()) return real(this);
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed),
                         0);
  return locked;
}

bool Mutex::ReaderTryLock() {
  KDP_REAL(bool (*)(Mutex*), "5Mutex13ReaderTryLockEv");
  Outermost outer;
  if (!outer.is()) return real(this);
  const unsigned flags = __tsan_mutex_read_lock | __tsan_mutex_try_lock;
  __tsan_mutex_pre_lock(this, flags);
  const bool locked = real(this);
  __tsan_mutex_post_lock(this, flags | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

void Mutex::Unlock() {
  KDP_REAL(void (*)(Mutex*), "5Mutex6UnlockEv");
  Outermost outer;
  if (!outer.is()) return real(this);
  __tsan_mutex_pre_unlock(this, 0);
  real(this);
  __tsan_mutex_post_unlock(this, 0);
}

void Mutex::ReaderUnlock() {
  KDP_REAL(void (*)(Mutex*), "5Mutex12ReaderUnlockEv");
  Outermost outer;
  if (!outer.is()) return real(this);
  __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

void Mutex::LockWhen(const Condition& cond) {
  KDP_REAL(void (*)(Mutex*, const Condition&), "5Mutex8LockWhenERKNS0_9ConditionE");
  AnnotatedLock(this, 0, [&] { return (real(this, cond), 0); });
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  KDP_REAL(void (*)(Mutex*, const Condition&), "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  AnnotatedLock(this, __tsan_mutex_read_lock, [&] { return (real(this, cond), 0); });
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  KDP_REAL(bool (*)(Mutex*, const Condition&, Duration),
           "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return AnnotatedLock(this, 0, [&] { return real(this, cond, timeout); });
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  KDP_REAL(bool (*)(Mutex*, const Condition&, Time),
           "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return AnnotatedLock(this, 0, [&] { return real(this, cond, deadline); });
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  KDP_REAL(bool (*)(Mutex*, const Condition&, Duration),
           "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return AnnotatedLock(this, __tsan_mutex_read_lock, [&] { return real(this, cond, timeout); });
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  KDP_REAL(bool (*)(Mutex*, const Condition&, Time),
           "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return AnnotatedLock(this, __tsan_mutex_read_lock, [&] { return real(this, cond, deadline); });
}

void Mutex::Await(const Condition& cond) {
  KDP_REAL(void (*)(Mutex*, const Condition&), "5Mutex5AwaitERKNS0_9ConditionE");
  AnnotatedRelock(this, HeldFlags(this), [&] { return (real(this, cond), 0); });
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  KDP_REAL(bool (*)(Mutex*, const Condition&, Duration),
           "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return AnnotatedRelock(this, HeldFlags(this), [&] { return real(this, cond, timeout); });
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  KDP_REAL(bool (*)(Mutex*, const Condition&, Time),
           "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return AnnotatedRelock(this, HeldFlags(this), [&] { return real(this, cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  KDP_REAL(void (*)(CondVar*, Mutex*), "7CondVar4WaitEPNS0_5MutexE");
  AnnotatedRelock(mu, HeldFlags(mu), [&] { return (real(this, mu), 0); });
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  KDP_REAL(bool (*)(CondVar*, Mutex*, Duration),
           "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  return AnnotatedRelock(mu, HeldFlags(mu), [&] { return real(this, mu, timeout); });
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  KDP_REAL(bool (*)(CondVar*, Mutex*, Time), "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return AnnotatedRelock(mu, HeldFlags(mu), [&] { return real(this, mu, deadline); });
}

// Notify releases on the notification and on its flag; the waits acquire once notified. That
// covers the lock-free fast paths too (an already notified Wait* and the inline
// HasBeenNotified()); the notification's own Mutex, locked inside, is then not annotated.
void Notification::Notify() {
  KDP_REAL(void (*)(Notification*), "12Notification6NotifyEv");
  Outermost outer;
  if (outer.is()) {
    __tsan_release(this);
    __tsan_release(NotifiedFlag(this));
  }
  real(this);
}

void Notification::WaitForNotification() const {
  KDP_REAL_CONST(void (*)(const Notification*), "12Notification19WaitForNotificationEv");
  Outermost outer;
  real(this);
  if (outer.is()) __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  KDP_REAL_CONST(bool (*)(const Notification*, Duration),
                 "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  Outermost outer;
  const bool notified = real(this, timeout);
  if (notified && outer.is()) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  KDP_REAL_CONST(bool (*)(const Notification*, Time),
                 "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  Outermost outer;
  const bool notified = real(this, deadline);
  if (notified && outer.is()) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl
