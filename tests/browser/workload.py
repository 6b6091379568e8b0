"""A small instrumented 'training' for the browser test, run under `footprint run` (it joins
that run through the Python API): scopes, loss and accuracy per epoch, a confusion matrix and a
hyperparameter set, with real CPU work from the fp_burn workload in each epoch.

    workload.py FP_BURN SEED
"""
import subprocess
import sys

import footprint as fp

burn, seed = sys.argv[1], int(sys.argv[2])
bm = fp.Benchmark()
loss = fp.LossTracker(bm)
accuracy = fp.TTATracker(bm)
with bm.scope("load data"):
    subprocess.run([burn, "1", "0.3"], check=True)
for epoch in range(6):
    with bm.scope("train epoch"):
        subprocess.run([burn, str(1 + epoch % 2), "0.15"], check=True)
        loss.track(2.0 / (epoch + 1 + seed), step=epoch)
        accuracy.track(0.5 + 0.07 * epoch + 0.02 * seed, step=epoch)
bm.log_confusion_matrix([[8 + seed, 2, 0], [1, 7, 2], [0, 1, 9 - seed]], ["cat", "dog", "bird"])
hp = fp.HyperparameterTracker(bm, ["lr", "batch"], target="accuracy", low_means_good=False)
hp.track({"lr": 0.01 * (seed + 1), "batch": 32 * (seed + 1), "accuracy": 0.85 + 0.05 * seed})
bm.close()
