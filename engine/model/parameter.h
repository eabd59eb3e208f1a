#pragma once
// A trainable tensor with all the copies mixed precision needs.
#include "engine/tensor/tensor.h"

#include <string>
#include <utility>
#include <vector>

namespace mantissa {

struct Parameter {
    std::string name;      // "3.linear.weight": layer index, layer type, role
    Tensor master;         // the weights the optimizer updates: fp32, or 16-bit in a pure fp16/bf16
                           // run or under bf16 master weights (precision.master_weights)
    Tensor working;        // the copy the layer computes with, in its compute type; shares
                           // master's storage when the types match
    Tensor grad;           // written by backward, in the working type (possibly loss-scaled)
    Tensor fp32Grad;       // unscaled fp32 gradient the optimizer reads (grad itself when grad is fp32)
    Tensor state1, state2; // optimizer state, in precision.optimizer_state's dtype
    Tensor compensation;   // bf16-kahan masters: what rounding the updates into master lost (bf16)
    bool decay = true;     // weight decay applies (not to biases or normalisation)

    // Every optimizer state tensor, by the name a checkpoint stores it under: all of a run's
    // training state that lives beside the weights (an undefined one is not in use).
    std::vector<std::pair<const char*, Tensor*>> optimizerState()
    {
        return {{"state1", &state1}, {"state2", &state2}, {"compensation", &compensation}};
    }
};

} // namespace mantissa
