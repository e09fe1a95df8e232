"""What each workload is, as a reader is told: its family (the article section), its title and
its methodology paragraph, in English and Chinese.

The collector's registry (``collector.workloads``) runs the workloads named here and takes
their descriptions from this table (``Workload.described``); the reporter reads the table to
group cases, title them and write the methodology page, with no collector installed. A
workload no entry names (recorded by another imagebench version) is read by the family its
run recorded, or as ``vocabulary.OTHER_FAMILY``. Like ``vocabulary`` this module imports
only the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkloadInfo:
    """A workload as the pages describe it.

    Attributes:
        name: short id, used in case ids.
        family: the article section (one of ``vocabulary.FAMILIES``).
        title: one-line title (English).
        method: the methodology paragraph (English): what runs, how it is timed, what is
            recorded. The methodology page is generated from it.
        title_zh, method_zh: the Chinese title and paragraph.
    """

    name: str
    family: str
    title: str
    method: str
    title_zh: str = ""
    method_zh: str = ""

    def title_in(self, lang: str) -> str:
        return (self.title_zh if lang == "zh" else "") or self.title

    def method_in(self, lang: str) -> str:
        return (self.method_zh if lang == "zh" else "") or self.method


WORKLOADS: dict[str, WorkloadInfo] = {w.name: w for w in (
    WorkloadInfo(
        name="allocator",
        family="memory",
        title="CUDA caching allocator: fragmentation, default against expandable segments",
        method=(
            "Two variable-size workloads run in a new child process per setting, once with the default "
            "caching allocator (PYTORCH_CUDA_ALLOC_CONF unset) and once with "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, the setting for fragmentation. The child is "
            "forked from a process that imported torch and never touched CUDA, and sets the variable before "
            "its first CUDA call; it reports whether the allocator's segments were expandable, and where that "
            "is not what the setting asks for, a fresh interpreter measures the case instead. "
            "random_tensors allocates tensors of log-uniform random sizes (64 KiB to 256 MiB), keeps 32 "
            "alive and frees a random one each step; varlen_transformer trains a 4-layer transformer "
            "encoder (d_model 1024) on batches of random batch size and sequence length (64 to 1024), as "
            "unpadded text does (full suite only). Both are seeded, so both settings see the same "
            "sequence. After one warm-up round, each round of steps is timed with the host clock between "
            "device synchronisations (time per step). Peak allocated memory (what tensors needed) and "
            "peak reserved memory (what the allocator held from the driver) over the whole child are "
            "recorded; their ratio, the fragmentation overhead, is derived at report time. GPU only, "
            "standard and full suites."
        ),
        title_zh="CUDA 缓存分配器：碎片化，默认设置与 expandable segments 对比",
        method_zh=(
            "两个可变尺寸负载，每种设置在一个新的子进程中运行：一次使用默认缓存分配器（不设 PYTORCH_CUDA_ALLOC_CONF"
            "），一次使用针对碎片化的 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
            "。子进程由一个已导入 torch、从未使用 CUDA 的进程 fork 而来，在第一次调用 CUDA 之前设置该变量；"
            "它报告分配器的内存段是否可扩展，若与设置不符，则改用全新的解释器测量该用例。random_tensors 分配对数均匀随机大小（64 KiB 到 256 MiB）的张量，保留"
            " 32 个存活，每步随机释放一个；varlen_transformer 训练一个 4 层 transformer"
            " 编码器（d_model 1024），批大小与序列长度（64 到 1024）随机，如同不做填充的文本"
            "（只在 full 套件中）。两者都固定随机种子，因此两种设置看到相同的序列。一轮预热之后，每轮步骤在"
            "设备同步之间用主机时钟计时（每步时间）。记录整个子进程的峰值已分配显存（张量所需）与峰值已保留显存（"
            "分配器向驱动申请并持有的），两者之比即碎片化开销，在生成报告时推导。仅 GPU，standard 与"
            " full 套件。"
        ),
    ),
    WorkloadInfo(
        name="amp",
        family="amp",
        title="Automatic mixed precision: FP32, bf16 and fp16 training",
        method=(
            "The ResNet-50 training step of the training workloads (224x224, batch 256) and, in the "
            "standard and full suites, the BERT-base step (batch 8, sequence 128) run in three "
            "precisions: FP32; torch.autocast with bfloat16; and torch.autocast with float16 plus "
            "torch.amp.GradScaler for loss scaling, the recipe of the seed articles. Weights and "
            "optimizer state stay FP32 in all three; ResNet-50 runs in channels_last layout on GPUs and "
            "cuDNN's autotuner stays at its default (off). Each whole step is timed on its own after "
            "warm-up with the host clock after a device synchronisation, and peak allocated and peak "
            "reserved GPU memory over the steps are recorded, so the speedup and the memory saved by each"
            " precision are derived at report time against the FP32 case with the same parameters. The "
            "full suite adds BERT-base at batch 32; the standard and full suites add bf16 ResNet-50 in "
            "the NCHW layout of the published write-ups' code, which tensor cores run far slower. On the CPU, fp32 and "
            "bf16 run at small sizes and fp16 is recorded as skipped with the reason."
        ),
        title_zh="自动混合精度：FP32、bf16 与 fp16 训练",
        method_zh=(
            "训练类负载中的 ResNet-50 训练步（224x224，批大小 256）以及 standard "
            "与 full 套件中的 BERT-base 训练步（批大小 8，序列长度 128）以三种精度运行：FP32"
            "；torch.autocast 配 bfloat16；torch.autocast 配 float16"
            " 并用 torch.amp.GradScaler 做损失缩放，即种子文章的做法。三种精度下权重与优化"
            "器状态都保持 FP32；GPU 上 ResNet-50 使用 channels_last 布局，cuDNN"
            " 自动调优保持默认（关闭）。预热后每个完整训练步在设备同步后用主机时钟单独计时，并记录训练期间 GPU"
            " 峰值已分配与峰值已保留显存，因此各精度相对参数相同的 FP32 用例的加速比与节省的显存在生成报告"
            "时推导。full 套件另加批大小 32 的 BERT-base；standard 与 full 套件"
            "另加种子代码所用 NCHW 布局下的 bf16 ResNet-50（张量核心在该布局下慢得多）。CPU"
            " 上以小尺寸运行 fp32 与 bf16，fp16 记录为跳过并写明原因。"
        ),
    ),
    WorkloadInfo(
        name="bert_train",
        family="training",
        title="BERT-base fine-tuning step (batch 8, sequence 128)",
        method=(
            "transformers' BertForSequenceClassification is built from BertConfig() (BERT-base: 12 "
            "layers, hidden size 768, two labels as in GLUE MRPC) with random weights; nothing is "
            "downloaded. Each step feeds the same random token ids (batch 8, sequence length 128, the "
            "MRPC fine-tuning shape of the published write-ups; larger shapes in the standard and full suites) with "
            "an all-ones attention mask and random labels, and runs forward, loss, backward and an "
            "AdamW update (lr 2e-5) in FP32. After warm-up, every whole step is timed on its own with "
            "the host clock after a device synchronisation, until the 95% CI of the median is narrow "
            "or the time budget is spent; peak allocated and reserved GPU memory are recorded. "
            "Sequences per step are stored as the work. The CPU suites use smaller configurations, "
            "named in the parameters: bert-mini (2 layers, hidden 128) and bert-tiny (2 layers, hidden "
            "64, vocabulary 1024); their times are not BERT-base times."
        ),
        title_zh="BERT-base 微调训练步（批大小 8，序列长度 128）",
        method_zh=(
            "用 BertConfig()（BERT-base：12 层，隐藏维度 768，与 GLUE MRPC 一样两个标签）构建 transformers 的 "
            "BertForSequenceClassification，随机权重，不下载任何东西。每一步输入相同的随机 token id（批大小 8、"
            "序列长度 128，即种子文章的 MRPC 微调尺寸；standard 与 full 套件另有更大的尺寸）、全 1 的 attention "
            "mask 和随机标签，以 FP32 执行前向、损失、反向和 AdamW 更新（lr 2e-5）。预热之后，每个完整训练步在设备"
            "同步后用主机时钟单独计时，直到中位数的 95% 置信区间足够窄或用完时间预算；同时记录 GPU 峰值已分配与"
            "已保留显存。每步的序列数作为工作量保存。CPU 套件使用更小的配置（写在参数里）：bert-mini（2 层，隐藏"
            "维度 128）与 bert-tiny（2 层，隐藏维度 64，词表 1024），其耗时不是 BERT-base 的耗时。"
        ),
    ),
    WorkloadInfo(
        name="checkpointing",
        family="memory",
        title="Activation checkpointing: memory saved against time spent",
        method=(
            "A stack of 16 pre-norm transformer encoder layers (d_model 1024, 16 heads, feed-forward "
            "4096, batch 8 x sequence 512, FP32; the full suite adds sequence 1024 under bf16 autocast) "
            "trains with SGD on a fixed random input, once storing all activations and once wrapping "
            "every layer in torch.utils.checkpoint.checkpoint(use_reentrant=False), which keeps each "
            "layer's input only and recomputes the rest during backward (the published write-ups' "
            "gradient-checkpointing advice). After warm-up each whole step is timed on its own with the "
            "host clock after a device synchronisation, and peak allocated and reserved GPU memory are "
            "recorded, so memory saved and time paid are derived at report time against the case without "
            "checkpointing. The CPU suites run a tiny stack and record step time only."
        ),
        title_zh="激活检查点：节省的显存与付出的时间",
        method_zh=(
            "一个由 16 层 pre-norm transformer 编码器层组成的堆叠（d_model 1024"
            "，16 头，前馈 4096，批大小 8 x 序列长度 512，FP32；full 套件另加序列长度 "
            "1024、bf16 autocast）在固定随机输入上用 SGD 训练：一次保存全部激活，一次把每一"
            "层包进 torch.utils.checkpoint.checkpoint(use_reentrant=False)"
            "，只保留每层的输入，其余激活在反向时重算（种子文章的梯度检查点建议）。预热之后每个完整训练步在设备同"
            "步后用主机时钟单独计时，并记录 GPU 峰值已分配与已保留显存，因此节省的显存与付出的时间在生成报告"
            "时与不使用检查点的用例比较得出。CPU 套件运行一个很小的堆叠，只记录步时间。"
        ),
    ),
    WorkloadInfo(
        name="compile",
        family="compile",
        title="torch.compile: compile time and speedup over eager",
        method=(
            "Each model is trained twice with the same parameters, differing only in mode: eager, and "
            "torch.compile(model) with the default inductor backend and mode (the optimizer step stays "
            "eager, as in the published write-ups). ResNet-50 (224x224, batch 256, channels_last) and BERT-base (batch "
            "8, sequence 128) train under bf16 autocast on GPUs that support it. On GPUs this runs in the"
            " standard and full suites only: a cold compile of ResNet-50 alone takes 45 to 65 s on an "
            "H200, more than the quick suite's budget. The CPU suites compile a tiny two-layer CNN only, "
            "since inductor's CPU backend compiles C++ and a cold compile of a larger model takes minutes"
            " on two cores. Compile time is the wall time of the first training step, which traces the "
            "model and compiles the forward and backward graphs, measured with inductor's and triton's "
            "caches pointed at an empty folder, so it is a cold compile as in a fresh container. Then "
            "steady-state steps are timed one by one after warm-up, as in the training workloads; the "
            "speedup over eager is derived at report time from the eager case with the same parameters. "
            "Graph breaks and recompilations are read from torch._dynamo's counters and compilation "
            "metrics after the steps. Compiling is expensive, so the case runs in one worker process."
        ),
        title_zh="torch.compile：编译时间与相对 eager 的加速",
        method_zh=(
            "每个模型用相同参数训练两次，只有 mode 不同：eager，以及使用默认 inductor 后端与"
            "默认模式的 torch.compile(model)（优化器更新仍是 eager，与种子文章一致）。"
            "ResNet-50（224x224，批大小 256，channels_last）与 BERT-base"
            "（批大小 8，序列长度 128）在支持 bf16 的 GPU 上以 bf16 autocast 训练"
            "。GPU 上只在 standard 与 full 套件中运行：在 H200 上仅 ResNet-50"
            " 的冷编译就要 45 到 65 秒，超出 quick 套件的预算。CPU 套件只编译一个很小的两层 "
            "CNN，因为 inductor 的 CPU 后端要编译 C++，在两个核上冷编译更大的模型要几分钟。"
            "编译时间是第一个训练步的墙钟时间（追踪模型并编译前向与反向图），测量时 inductor 与 triton"
            " 的缓存指向空目录，因此是与全新容器相同的冷编译。之后像训练类负载一样，在预热后逐步计时稳定状态的训"
            "练步；相对 eager 的加速比在生成报告时与参数相同的 eager 用例比较得出。训练步结束后从 "
            "torch._dynamo 的计数器与编译指标读取图中断（graph break）与重新编译次数。编"
            "译代价高，因此该用例只在一个工作进程中运行。"
        ),
    ),
    WorkloadInfo(
        name="concurrent_inference",
        family="inference",
        title="Concurrent inference tasks on one device",
        method=(
            "2, 4 and 6 inference tasks run at once, each a separate process (multiprocessing, forked "
            "from a fork server that has imported torch and torchvision but never touched CUDA) "
            "with its own CUDA context and its own ResNet-50 (random weights, eval, torch.inference_mode,"
            " batch 32 of 224x224 images); the full suite repeats 6 tasks with each process limited to "
            "its share of GPU memory (torch.cuda.set_per_process_memory_fraction, 0.9/6). Each task loads"
            " its model and warms up, then all start at the same instant and run synchronous requests for"
            " a fixed duration (5 s; standard and full suites). Recorded: tasks_ok, the number of tasks "
            "that finished without error (the published write-ups' success rate); the aggregate throughput in images/s,"
            " one sample per 0.5 s window, summing the requests every task completed in that window; and "
            "each task's peak allocated and reserved GPU memory. Errors of failed tasks are kept in the "
            "case's notes. The CPU suites run 2 tasks of a ResNet-18 on 64x64 images, with the cores "
            "split between them. The cases run in one worker process: each spawns its own tasks, and its "
            "0.5 s windows are the samples."
        ),
        title_zh="同一设备上的并发推理任务",
        method_zh=(
            "同时运行 2、4、6 个推理任务，每个任务是一个独立进程（multiprocessing，从一个已导入 torch 与"
            " torchvision、但从未使用 CUDA 的 fork server 派生），拥有自己的 CUDA 上下文和自己的 ResNet-50（随机权重，eval，torch.inference_mode"
            "，批大小 32，224x224 图像）；full 套件再运行一次 6 个任务，并用 torch.cuda.set_per_process_memory_fraction"
            " 把每个进程限制在它的显存份额（0.9/6）内。每个任务先加载模型并预热，然后所有任务在同一时刻开始"
            "，在固定时长内（5 秒；standard 与 full 套件）连续发出同步请求。记录：tasks_ok"
            "，即无错误完成的任务数（种子文章里的成功率）；聚合吞吐（图像/秒），每 0.5 秒一个窗口一个样本，"
            "为该窗口内所有任务完成的请求之和；以及每个任务的 GPU 峰值已分配与已保留显存。失败任务的错误写入"
            "用例备注。CPU 套件运行 2 个任务，模型为 64x64 图像上的 ResNet-18，CPU 核"
            "在任务间平分。这些用例只在一个工作进程中运行：每个用例自己启动任务进程，0.5 秒窗口即其样本。"
        ),
    ),
    WorkloadInfo(
        name="conv2d",
        family="basic",
        title="2-D convolution, 3x3, same channels in and out",
        method=(
            "A bias-free `nn.Conv2d(C, C, 3, padding=1)` on a random batch (16x64x224x224 on a GPU, as in the published write-ups; "
            "4x32x56x56 on the CPU), forward alone under `no_grad` and forward plus backward, in NCHW and "
            "`channels_last` layouts, with `cudnn.benchmark` at the stack's default (off): cuDNN picks the algorithm by its "
            "heuristics, as in a user's script and the published write-ups. "
            "`fp32` runs at the stack's own defaults (cuDNN's TF32 default included), `fp32-strict` with TF32 off, `tf32` with it on; "
            "each case records the precision settings it ran with. "
            "Timed in calibrated blocks like matmul. Work: 2·N·C²·9·H·W FLOPs forward, three times that for forward+backward."
        ),
        title_zh="二维卷积（3×3，输入输出通道相同）",
        method_zh=(
            "无偏置的 `nn.Conv2d(C, C, 3, padding=1)`，输入为随机张量（GPU 上为 16×64×224×224，与原文一致；CPU 上为 4×32×56×56），"
            "分别测前向（`no_grad`）与前向+反向，布局为 NCHW 与 `channels_last`，`cudnn.benchmark` 保持软件栈默认（关闭）：由 cuDNN 的启发式规则选择算法，与用户脚本及原文相同。"
            "`fp32` 使用软件栈默认设置（包括 cuDNN 默认的 TF32），`fp32-strict` 关闭 TF32，`tf32` 开启 TF32；每个用例记录其实际生效的精度设置。"
            "计时方式与矩阵乘法相同。工作量：前向 2·N·C²·9·H·W 次浮点运算，前向+反向为其三倍。"
        ),
    ),
    WorkloadInfo(
        name="cpu_vs_gpu",
        family="basic",
        title="CPU against GPU: float32 matmul",
        method=(
            "The same float32 `torch.mm` (TF32 off) on the host CPU, with torch's default threads, and on the GPU. "
            "The CPU side is timed with `perf_counter_ns`, the GPU side with CUDA events, both in calibrated blocks. "
            "Recorded only on machines with a GPU."
        ),
        title_zh="CPU 与 GPU 对比：float32 矩阵乘法",
        method_zh=(
            "同一个 float32 `torch.mm`（关闭 TF32）分别在主机 CPU（torch 默认线程数）和 GPU 上运行。CPU 端用 `perf_counter_ns` 计时，"
            "GPU 端用 CUDA 事件计时，均为标定后的块计时。仅在有 GPU 的机器上记录。"
        ),
    ),
    WorkloadInfo(
        name="dataloader",
        family="data",
        title="DataLoader throughput by worker count and pinned memory",
        method=(
            "A synthetic in-memory dataset of uint8 images goes through torch.utils.data.DataLoader with "
            "a real CPU-side transform done with torch ops in __getitem__: a random crop (32 from 40 "
            "pixels, CIFAR-10-like; 224 from 256, ImageNet-like, with 0, 4 and 8 workers in the full "
            "suite), a random horizontal flip, conversion to float and per-channel normalisation. Cases "
            "vary num_workers (0, 2, 4, 8, capped by the CPUs available to the worker; 0 and 4 in the "
            "quick suite) and pin_memory (on GPUs only). Each batch is copied to the device (non_blocking"
            " when pinned) and, on a GPU, a small model (ResNet-18, SGD) trains on it, as in a real input"
            " pipeline. After one untimed window that starts the workers, windows of max(4, 2 x workers) "
            "batches are timed with the host clock, ending in a device synchronisation; each window gives"
            " one sample of samples per second delivered to the device (metric throughput), until the 95%"
            " CI of the median is narrow or the budget is spent. While it runs, GPU utilisation is "
            "sampled every 0.2 s through NVML (torch.cuda.utilization, needs pynvml; at least 1 s of "
            "samples, one whole NVML averaging period), the figure the published write-ups quote as 45% to 82%."
        ),
        title_zh="DataLoader 吞吐：工作进程数与锁页内存",
        method_zh=(
            "一个内存中的合成 uint8 图像数据集经 torch.utils.data.DataLoader "
            "加载，__getitem__ 用 torch 运算做真实的 CPU 端变换：随机裁剪（从 40 像素"
            "裁 32，类 CIFAR-10；full 套件另有从 256 裁 224，类 ImageNet，0、"
            "4、8 个工作进程）、随机水平翻转、转为浮点并按通道归一化。用例改变 num_workers（0、2"
            "、4、8，不超过工作进程可用的 CPU 数；quick 套件只测 0 和 4）与 pin_memory"
            "（仅 GPU）。每个批次被拷贝到设备（锁页时 non_blocking），在 GPU 上还有一个小模"
            "型（ResNet-18，SGD）用它训练，如同真实的输入管线。先跑一个不计时的窗口以启动工作进程，之"
            "后以主机时钟对每个 max(4, 2 x 工作进程数) 个批次的窗口计时，窗口末尾做设备同步；每个窗"
            "口给出一个“每秒送达设备的样本数”样本（指标 throughput），直到中位数的 95% 置信区间"
            "足够窄或用完预算。运行期间每 0.2 秒通过 NVML（torch.cuda.utilization"
            "，需要 pynvml；至少采样 1 秒，即 NVML 的一个完整平均周期）采样 GPU 利用率，即种子文章中 45% 到 82% 的那"
            "个数字。"
        ),
    ),
    WorkloadInfo(
        name="inference",
        family="inference",
        title="ResNet-50 inference latency (batch 1 to 64)",
        method=(
            "torchvision's ResNet-50 with random weights runs in eval mode under torch.inference_mode on "
            "a fixed random batch of 224x224 images, at batch sizes 1, 16, 32 and 64 (the published write-ups' sizes; "
            "bf16 at 1 and 64 only in the quick suite), in FP32 (NCHW) and with weights and inputs in "
            "bfloat16 and channels_last layout, cuDNN's autotuner at its default (off). Every sample is "
            "one request: one forward pass of one batch, timed with the host clock from a synchronised "
            "device to the synchronisation after the forward, i.e. the latency a synchronous caller sees,"
            " launch overhead included. A fixed number of requests follows five warm-up requests (100 in "
            "the quick suite, 300 in standard and full), so the reporter computes p50, p95 and p99 "
            "from the raw samples; images per request are stored so throughput is derived. Peak GPU "
            "memory is recorded. The CPU suites time batch 1 at 112x112."
        ),
        title_zh="ResNet-50 推理延迟（批大小 1 到 64）",
        method_zh=(
            "随机权重的 torchvision ResNet-50 在 eval 模式和 torch.inference_mode"
            " 下，对固定的 224x224 随机图像批次推理，批大小为 1、16、32、64（种子文章的尺寸；quick"
            " 套件中 bf16 只测 1 和 64），分别用 FP32，以及权重与输入均为 bfloat16 且"
            "采用 channels_last 布局，cuDNN 自动调优保持默认（关闭）。每个样本是一次请求：对"
            "一个批次做一次前向，从设备已同步开始、到前向后再次同步为止用主机时钟计时，即同步调用者看到的延迟（包"
            "括 kernel 启动开销）。五次预热请求之后执行固定次数的请求（quick 100 次，standard"
            " 300 次，full 也是 300 次），报告据原始样本计算 p50、p95、p99；每次请求的图像数被"
            "保存，以便推导吞吐。同时记录 GPU 峰值显存。CPU 套件只测 112x112、批大小 1。"
        ),
    ),
    WorkloadInfo(
        name="matmul",
        family="basic",
        title="Matrix multiply (n x n by n x n)",
        method=(
            "`torch.mm(a, b, out=c)` on square random matrices (never zeros) of each size and dtype; "
            "`fp32` runs at the stack's own defaults (no TF32 flag or matmul precision touched), `fp32-strict` with TF32 "
            "off everywhere, `tf32` with TF32 matrix units on; each case records the precision settings it ran with. "
            "After warm-up, blocks of k back-to-back calls are timed (CUDA events around the block on a GPU, "
            "`perf_counter_ns` on the CPU), k calibrated so a block is long against timer resolution and launch overhead. "
            "Work per call: 2n³ FLOPs and 3n² elements moved, from which TFLOP/s is derived."
        ),
        title_zh="矩阵乘法（n×n 乘 n×n）",
        method_zh=(
            "对每种尺寸和数据类型的随机方阵（从不用全零）执行 `torch.mm(a, b, out=c)`；`fp32` 使用软件栈自身的默认设置"
            "（不改动任何 TF32 开关或矩阵乘精度），`fp32-strict` 全部关闭 TF32，`tf32` 为 float32 存储并开启 TF32 矩阵单元；每个用例记录其实际生效的精度设置。预热后按块计时：一块为 k 次连续调用（GPU 上用 CUDA 事件包围整块，"
            "CPU 上用 `perf_counter_ns`），k 经过标定，使一块的时长远大于计时器分辨率和启动开销。每次调用的工作量为 2n³ 次浮点运算，据此换算 TFLOP/s。"
        ),
    ),
    WorkloadInfo(
        name="max_batch",
        family="memory",
        title="Largest training batch without out-of-memory",
        method=(
            "For ResNet-50 (224x224, FP32, channels_last, SGD with momentum) and BERT-base (sequence 128,"
            " FP32, AdamW), the largest batch size that runs a training step without running out of GPU "
            "memory (full suite only: a search takes a minute or two). Each probe is a fresh child "
            "process that builds the model and runs two whole training steps at one batch size (the "
            "second step holds the optimizer state too), set up as in the training workloads; it reports "
            "success or an out-of-memory error, with the memory it used, and a child that dies without "
            "reporting counts as out of memory. The first probe, at batch 512, measures the memory that "
            "stays whatever the batch (weights, gradients, optimizer state) and the peak reserved memory; "
            "extrapolating the part that grows with the batch to the device's capacity gives a first guess. "
            "The search probes that guess, then steps up while sizes fit or down while they fail (the step "
            "doubling from 128), then bisects between the largest size that fit and the smallest that "
            "failed until they are 128 apart (without a memory reading it doubles from 512 instead, up to "
            "a cap of 8192). The largest size that fit is recorded (max_batch), with its peak memory."
            " The probed sizes are kept in the case's notes. GPU only; the smoke suite runs one tiny "
            "capped search, which records its cap as a lower bound."
        ),
        title_zh="不发生显存溢出的最大训练批大小",
        method_zh=(
            "对 ResNet-50（224x224，FP32，channels_last，带动量的 SGD）和 "
            "BERT-base（序列长度 128，FP32，AdamW），求不耗尽 GPU 显存即可完成一个训练"
            "步的最大批大小（只在 full 套件中：一次搜索要一两分钟）。每次探测都是一个新的子进程：构建模型，"
            "在某个批大小下运行两个完整训练步（第二步还持有优化器状态），设置与训练类负载相同，报告成功或显存溢出"
            "以及所用显存；未报告就退出的子进程按显存溢出计。第一次探测（批大小 512）测出不随批大小变化的显存（权重、"
            "梯度、优化器状态）和峰值保留显存；把随批大小增长的部分线性外推到设备容量，得到初始估计。搜索先探测该估计值，"
            "能容纳就向上、失败就向下逐步探测（步长从 128 起翻倍），再在能容纳的最大值与失败的最小值之间二分，直到两者"
            "相差不超过 128（没有显存读数时改为从 512 开始翻倍，上限 8192）；记录能容纳的最大批大小（max_batch"
            "）及其峰值显存。探测过的批大小写入用例备注。仅 GPU；smoke 套件运行一个很小的、有上限的搜索"
            "，记录的上限只是下界。"
        ),
    ),
    WorkloadInfo(
        name="memory",
        family="basic",
        title="Memory bandwidth: clone and broadcast add",
        method=(
            "`x.clone()` of a float32 vector, and `torch.add(x, row, out=y)` of a (n/1024)x1024 matrix and a broadcast row, "
            "from 1M to 256M elements. Timed in calibrated blocks; GB/s is derived from 2·4·n bytes per call "
            "(each element read once and written once), the way a copy's bandwidth is counted."
        ),
        title_zh="显存带宽：拷贝与广播加法",
        method_zh=(
            "对 float32 向量执行 `x.clone()`，以及 (n/1024)×1024 矩阵与广播行向量的 `torch.add(x, row, out=y)`，元素数从 1M 到 256M。"
            "按块计时；带宽按每次调用 2·4·n 字节（每个元素读一次、写一次）换算为 GB/s。"
        ),
    ),
    WorkloadInfo(
        name="multigpu",
        family="multigpu",
        title="Multi-GPU training scaling: DataParallel and DDP",
        method=(
            "ResNet-50 (224x224, FP32, channels_last, SGD with momentum) trains on a synthetic batch of "
            "64 images per replica, so the global batch grows with the replica count (weak scaling). DDP "
            "cases start `python -m torch.distributed.run --nproc_per_node k` (torchrun) as a subprocess "
            "for k = 1, 2, 4, ... up to the GPU count (1 and the GPU count in the quick suite; none there"
            " on a single GPU): each process drives one GPU through DistributedDataParallel with NCCL "
            "(gloo and a tiny CNN on the CPU, with the cores split between the processes). Rank 0 times "
            "each whole step after warm-up with the host clock after a device synchronisation; after each"
            " step it broadcasts whether to stop (outside the timed region) so that every rank runs the "
            "same steps, and returns its step times and peak memory through a file. Multi-node runs "
            "(`collector run --nnodes N --rdzv-endpoint HOST:PORT` on every node) add cases with `nodes=N`"
            ": each node starts torchrun with a c10d rendezvous of its own per case, the node that holds "
            "rank 0 records the case's step time, and every other node records the same steps as seen "
            "by its first rank as `wall_time`, with its own fingerprint; a process group that loses a "
            "peer fails the case on every node within 300 s and the run goes on. With two or "
            "more GPUs, nn.DataParallel cases (as in the published write-ups) time the same step in the worker process,"
            " the batch split over k GPUs. The global batch is stored as the work, so throughput and the "
            "scaling efficiency (throughput at k over k times throughput at 1) are derived at report "
            "time. The cases run in one worker process: each starts k processes of its own."
        ),
        title_zh="多 GPU 训练扩展：DataParallel 与 DDP",
        method_zh=(
            "ResNet-50（224x224，FP32，channels_last，带动量的 SGD）在每个副"
            "本 64 张的合成批次上训练，全局批大小随副本数增长（弱扩展）。DDP 用例以子进程方式启动 `python"
            " -m torch.distributed.run --nproc_per_node k`（torchrun"
            "），k = 1、2、4……直到 GPU 数（quick 套件只测 1 和 GPU 数；单 GPU 时"
            " quick 不测）：每个进程通过 DistributedDataParallel 驱动一块 GPU"
            "，通信用 NCCL（CPU 上用 gloo 和一个很小的 CNN，CPU 核在进程间平分）。rank"
            " 0 在预热后于设备同步后用主机时钟为每个完整训练步计时；每步之后它广播是否停止（不计入计时），使所"
            "有 rank 运行相同的步数，并通过文件返回步时间与峰值显存。多节点运行（每个节点执行 `collector run --nnodes N"
            " --rdzv-endpoint HOST:PORT`）增加 `nodes=N` 的用例：每个节点为每个用例以独立的 c10d 会合启动 torchrun，"
            "持有 rank 0 的节点记录该用例的步时间，其他节点把其第一个 rank 看到的同一批步记录为 `wall_time`，并附上各自的"
            "环境指纹；进程组失去对端时，该用例在每个节点上于 300 秒内记为失败，运行继续。两块及以上 GPU 时，nn.DataParallel 用例（与种子"
            "文章相同）在工作进程内为同样的训练步计时，批次拆分到 k 块 GPU 上。全局批大小作为工作量保存，"
            "因此吞吐与扩展效率（k 个副本的吞吐除以 k 倍单副本吞吐）在生成报告时推导。这些用例只在一个工作进"
            "程中运行：每个用例自己启动 k 个进程。"
        ),
    ),
    WorkloadInfo(
        name="numerics",
        family="numerics",
        title="Numerical drift: losses and output checksum of a fixed-seed run",
        method=(
            "A small CNN (two conv-BatchNorm-ReLU blocks, a spatial mean and a linear head) is created "
            "from a fixed seed on the CPU and moved to the device, so every stack starts from the same "
            "weights, and trains with SGD (lr 0.05, momentum 0.9) for a fixed number of steps (50 in the "
            "quick suite, 100 in standard, 200 in full) on four fixed synthetic batches of 32 images "
            "drawn from a seeded CPU generator, in FP32 and, in the standard and full suites on GPUs with"
            " bf16, under bf16 autocast. It runs in a child process with "
            "torch.use_deterministic_algorithms(True), cuDNN benchmarking off and "
            "CUBLAS_WORKSPACE_CONFIG=:4096:8, so repeated runs on one stack give the same bits. The loss "
            "after every step is recorded (sample index = step), then the sum of the trained model's "
            "outputs on a fixed evaluation batch (checksum). Nothing is timed: the reporter shows where "
            "two stacks' loss curves and checksums part. One worker process."
        ),
        title_zh="数值漂移：固定种子训练的损失与输出校验和",
        method_zh=(
            "一个小 CNN（两个 conv-BatchNorm-ReLU 块、空间均值和一个线性头）在 CPU "
            "上以固定种子创建后移到设备，因此每个软件栈都从相同的权重出发；它在四个固定的合成批次（每批 32 张"
            "图像，由固定种子的 CPU 生成器产生）上用 SGD（lr 0.05，momentum 0.9）训练"
            "固定步数（quick 50 步，standard 100 步，full 200 步），用 FP32，"
            "standard 与 full 套件在支持 bf16 的 GPU 上另用 bf16 autocast"
            "。它在子进程中运行，开启 torch.use_deterministic_algorithms(True)"
            "，关闭 cuDNN benchmark，并设置 CUBLAS_WORKSPACE_CONFIG=:4096:8"
            "，使同一软件栈上的重复运行得到相同的比特。记录每一步之后的损失（样本序号即步数），以及训练后模型在固"
            "定评估批次上输出之和（checksum）。不计时：报告展示两个软件栈的损失曲线与校验和从哪里开始分开"
            "。只用一个工作进程。"
        ),
    ),
    WorkloadInfo(
        name="resnet50_train",
        family="training",
        title="ResNet-50 training step (CIFAR-10 and ImageNet shapes)",
        method=(
            "torchvision's ResNet-50 is built from code with random weights (weights=None; nothing is "
            "downloaded) and trained with SGD (lr 0.001, momentum 0.9) and cross-entropy in FP32, as in "
            "the seed articles. Synthetic batches of CIFAR-10 shape (3x32x32, 10 classes, batch 128) and,"
            " on GPUs, ImageNet shape (3x224x224, 1000 classes, batch 256) are created once on the "
            "device; the real-CIFAR-10 case reads torchvision's CIFAR10 from --data-dir (never "
            "downloaded; skipped when absent) through a DataLoader with ToTensor and Normalize, so its "
            "step includes waiting for the next batch. On GPUs model and inputs use the channels_last "
            "layout, which tensor cores need (the H200 reference's 3,100 img/s); the standard suite adds "
            "the NCHW layout of the published write-ups' code. cuDNN's autotuner stays at its default (off). After "
            "warm-up steps (5 on a GPU) every whole step (zero_grad, forward, loss, backward, optimizer "
            "step) is timed on its own with the host clock after a device synchronisation, until the 95% "
            "CI of the median is narrow or the suite's time budget is spent. Peak allocated and reserved "
            "GPU memory over the steps are recorded. Images per step are stored as the work, so images/s "
            "and the time of a 50,000-image CIFAR-10 epoch are derived at report time. The CPU suites use"
            " smaller batches (named in the parameters)."
        ),
        title_zh="ResNet-50 训练步（CIFAR-10 与 ImageNet 尺寸）",
        method_zh=(
            "用 torchvision 从代码构建 ResNet-50（weights=None，随机权重，从不"
            "下载），以 FP32、SGD（lr 0.001，momentum 0.9）和交叉熵训练，与种子文章一"
            "致。合成批次有 CIFAR-10 尺寸（3x32x32，10 类，批大小 128）以及 GPU 上的"
            " ImageNet 尺寸（3x224x224，1000 类，批大小 256），只在设备上生成一次；真"
            "实 CIFAR-10 用例从 --data-dir 读取 torchvision 格式的 CIFAR10"
            "（从不下载，缺失时跳过），经 DataLoader（ToTensor、Normalize）加载，因此"
            "其训练步包含等待下一批数据的时间。GPU 上模型与输入采用张量核心所需的 channels_last"
            " 布局（H200 参考数据的 3,100 张/秒即如此）；standard 套件另加种子代码所用的 "
            "NCHW 布局。cuDNN 自动调优保持默认（关闭）。预热（GPU 上 5 步）之后，每个完整训练步"
            "（zero_grad、前向、损失、反向、优化器更新）在设备同步后用主机时钟单独计时，直到中位数的 95%"
            " 置信区间足够窄或用完套件的时间预算。同时记录 GPU 峰值已分配与已保留显存。每步的图像数作为工作"
            "量保存，图像/秒和 50,000 张图像的 CIFAR-10 单 epoch 时间在生成报告时推导。"
            "CPU 套件使用更小的批大小（写在参数里）。"
        ),
    ),
)}
