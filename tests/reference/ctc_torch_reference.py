# Makes the PyTorch reference numbers in ctc_test.cc (TorchReference.*). Run with a Python that
# has torch (Debian's /usr/bin/python3 here has 1.13): /usr/bin/python3 ctc_torch_reference.py
# Logits follow a closed formula so the C++ test rebuilds them without shipping arrays:
#   logits[b][t][v] = 2 * sin(0.7 t + 1.3 v + 0.5 b)
import math
import torch

B, T, V = 3, 7, 5
labels = [[1, 2, 2], [3, 1, 4], [2, 2, 2]]  # padded [B, S_max]; row 2 is impossible at T = 4
input_lengths = [7, 6, 4]
label_lengths = [3, 2, 3]

logits = torch.tensor(
    [[[2 * math.sin(0.7 * t + 1.3 * v + 0.5 * b) for v in range(V)] for t in range(T)]
     for b in range(B)], dtype=torch.float64, requires_grad=True)
log_probs = torch.log_softmax(logits, dim=-1)
losses = torch.nn.functional.ctc_loss(
    log_probs.transpose(0, 1), torch.tensor(labels), torch.tensor(input_lengths),
    torch.tensor(label_lengths), blank=0, reduction='none', zero_infinity=True)
losses.sum().backward()
print('losses', ['%.12f' % x for x in losses.tolist()])
# gradient w.r.t. the logits of utterance 0, frame 2 and utterance 1, frame 5
print('grad[0][2]', ['%.12f' % x for x in logits.grad[0][2].tolist()])
print('grad[1][5]', ['%.12f' % x for x in logits.grad[1][5].tolist()])
