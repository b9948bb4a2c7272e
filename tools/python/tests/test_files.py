"""Files shared with the CLI: program files in every format, parameter files, and the round trip
Python -> file -> paddlec compile -> file -> Python giving identical outputs."""

import subprocess

import numpy as np
import pytest

import paddlec
from paddlec import errors, layers

RNG = np.random.RandomState(0)


def lenet_like():
    img = layers.data("img", [1, 12, 12])
    label = layers.data("label", [1], dtype="int64")
    c = layers.conv2d(img, 4, 3, padding=1, act="relu", name="conv")
    c = layers.batch_norm(c, name="bn")
    c = layers.pool2d(c, pool_size=2, pool_stride=2, name="pool")
    prob = layers.fc(c, 5, act="softmax", name="fc")
    loss = layers.mean(layers.cross_entropy(prob, label), name="loss")
    return prob, loss


def feed():
    return {"img": RNG.rand(3, 1, 12, 12).astype("f4"), "label": RNG.randint(0, 5, (3, 1))}


@pytest.mark.parametrize("suffix", [".pbtxt", ".pb", ".json", ".pdmodel"])
def test_save_and_load_a_forward_program_in_every_format(fresh_programs, tmp_path, suffix):
    main, _ = fresh_programs
    lenet_like()
    path = tmp_path / ("m" + suffix)
    main.save(path)
    loaded = paddlec.Program.load(path)
    assert loaded.serialize() == main.serialize()
    assert [op.type for op in loaded.global_block().ops] == [op.type for op in main.global_block().ops]
    assert loaded.global_block().var("fc.w").shape == (144, 5) and isinstance(
        loaded.global_block().var("fc.w"), paddlec.Parameter)
    assert len(loaded.startup_program.global_block().ops) == 0  # a bare ProgramDesc has no startup program


def test_round_trip_through_paddlec_compile_gives_identical_outputs(fresh_programs, tmp_path, cli):
    main, startup = fresh_programs
    prob, loss = lenet_like()
    data = feed()
    exe = paddlec.Executor()
    exe.run(startup)
    want = exe.run(main, feed=data, fetch_list=[prob, loss])

    main.save(tmp_path / "m.pbtxt")
    subprocess.run([cli, "compile", str(tmp_path / "m.pbtxt"), "-o", str(tmp_path / "m.pb")], check=True,
                   capture_output=True)
    loaded = paddlec.Program.load(tmp_path / "m.pb")
    assert loaded.passes_applied == ["validate", "infer-shape", "init-params"]
    scope = paddlec.Scope()
    exe.run(loaded.startup_program, scope=scope)
    got = exe.run(loaded, feed=data, fetch_list=["fc.softmax", "loss"], scope=scope)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)  # same initializers, same seed, same kernels: bit for bit


def test_a_training_program_from_python_matches_compile_train(fresh_programs, tmp_path, cli):
    main, startup = fresh_programs
    _, loss = lenet_like()
    main.save(tmp_path / "forward.pbtxt")
    paddlec.optimizer.Adam(learning_rate=0.01).minimize(loss)
    main.save(tmp_path / "python_train.pb")  # a CompiledProgram: it has gradients
    subprocess.run([cli, "compile", str(tmp_path / "forward.pbtxt"), "--train", "--optimizer=adam", "--lr=0.01",
                    "-o", str(tmp_path / "cli_train.pb")], check=True, capture_output=True)
    ours = paddlec.Program.load(tmp_path / "python_train.pb")
    theirs = paddlec.Program.load(tmp_path / "cli_train.pb")
    assert ours.serialize() == theirs.serialize()
    assert ours.startup_program.serialize() == theirs.startup_program.serialize()
    assert ours.param_grads == theirs.param_grads and ours.loss_name == "loss"
    data = feed()
    losses = []
    for program in (ours, theirs):
        scope, exe = paddlec.Scope(), paddlec.Executor()
        exe.run(program.startup_program, scope=scope)
        losses.append([exe.run(program, feed=data, fetch_list=["loss"], scope=scope)[0] for _ in range(3)])
    np.testing.assert_array_equal(losses[0], losses[1])
    assert losses[0][2] < losses[0][0]


def test_paddlec_run_reads_python_programs_and_parameters(fresh_programs, tmp_path, cli):
    main, startup = fresh_programs
    prob, _ = lenet_like()
    exe = paddlec.Executor()
    exe.run(startup)
    paddlec.global_scope().set("fc.b", RNG.randn(5).astype("f4"))  # values the CLI could not guess
    data = feed()
    (want,) = exe.run(main, feed=data, fetch_list=[prob])
    main.save(tmp_path / "m.pbtxt")
    names = paddlec.io.save_params(tmp_path / "p.pdiparams", main)
    assert names == sorted(names) and "bn.mean" in names and "fc.w" in names
    np.save(tmp_path / "img.npy", data["img"])
    np.save(tmp_path / "label.npy", data["label"])
    subprocess.run([cli, "run", str(tmp_path / "m.pbtxt"), "--params", str(tmp_path / "p.pdiparams"),
                    "--feed", "img=%s" % (tmp_path / "img.npy"), "--feed", "label=%s" % (tmp_path / "label.npy"),
                    "--fetch", "fc.softmax", "--out", str(tmp_path / "out")], check=True, capture_output=True)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "fc.softmax.npy"), want)


def test_parameters_written_by_the_cli_load_into_python(tmp_path, cli, repo):
    out = tmp_path / "p.pdiparams"
    subprocess.run([cli, "run", str(repo / "configs" / "mlp.pbtxt"), "--seed", "5", "--save-params", str(out),
                    "--fetch", "fc1.w", "--out", str(tmp_path / "o"), "--op-range", "0:1", "--feed",
                    "img=%s" % _npy(tmp_path, "img", np.zeros((1, 784), "f4"))], check=True, capture_output=True)
    program = paddlec.Program.load(repo / "configs" / "mlp.pbtxt")
    scope = paddlec.Scope()
    names = paddlec.io.load_params(out, program, scope)
    assert names == ["fc1.b", "fc1.w", "fc2.b", "fc2.w", "fc3.b", "fc3.w"]
    np.testing.assert_array_equal(scope.get("fc1.w"), np.load(tmp_path / "o" / "fc1.w.npy"))
    with pytest.raises(errors.Error, match="fc1"):
        paddlec.io.load_params(out, program, scope, names=["fc1.w", "fc1.b"] + names[2:])  # wrong order: mismatch


def _npy(tmp_path, name, array):
    path = tmp_path / (name + ".npy")
    np.save(path, array)
    return path


def test_paddlec_train_accepts_a_python_training_program(fresh_programs, tmp_path, cli):
    main, _ = fresh_programs
    img = layers.data("img", [784])
    label = layers.data("label", [1], dtype="int64")
    loss = layers.mean(layers.softmax_with_cross_entropy(layers.fc(img, 10, name="fc"), label), name="loss")
    paddlec.optimizer.Momentum(0.05, momentum=0.9).minimize(loss)
    main.save(tmp_path / "train.pb")
    run = subprocess.run([cli, "train", str(tmp_path / "train.pb"), "--epochs", "1", "--limit-train", "640",
                          "--limit-test", "200", "--no-progress"], check=True, capture_output=True, text=True)
    assert "epoch 1/1: train loss" in run.stdout


def test_load_reports_missing_and_malformed_files(tmp_path):
    with pytest.raises(errors.FileError):
        paddlec.Program.load(tmp_path / "missing.pb")
    (tmp_path / "bad.pbtxt").write_text("blocks { idx: ")
    with pytest.raises(errors.ParseError):
        paddlec.Program.load(tmp_path / "bad.pbtxt")
