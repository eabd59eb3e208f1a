#include "cli/interrupt.h"

#include "engine/train/trainer.h"

#include <atomic>
#include <csignal>

namespace mantissa::cli {

namespace {

// Lock-free atomics only: they are what a signal handler may touch.
std::atomic<Trainer*> g_activeTrainer{nullptr};
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<Trainer*>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

void onInterrupt(int)
{
    g_interrupted.store(true);
    if (Trainer* trainer = g_activeTrainer.load())
        trainer->requestStop(); // sets the trainer's atomic flag, nothing more
}

} // namespace

InterruptHandler::InterruptHandler()
{
    g_interrupted.store(false);
    std::signal(SIGINT, onInterrupt);
}

InterruptHandler::~InterruptHandler()
{
    std::signal(SIGINT, SIG_DFL);
    g_activeTrainer.store(nullptr);
}

void InterruptHandler::setActiveTrainer(Trainer* trainer) { g_activeTrainer.store(trainer); }

bool InterruptHandler::interrupted() { return g_interrupted.load(); }

} // namespace mantissa::cli
