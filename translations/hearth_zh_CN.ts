<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
    <context>
        <name>AdapterPanel</name>
        <message>
            <source>LoRA adapters</source>
            <translation>LoRA 适配器</translation>
        </message>
        <message>
            <source>Adapters change a loaded model's behaviour without loading another model. Those switched on are applied again whenever a model loads.</source>
            <translation>适配器无需加载另一个模型即可改变已加载模型的行为。已开启的适配器会在每次加载模型时重新应用。</translation>
        </message>
        <message>
            <source>No model is loaded. Load one to see which adapters fit it and to apply them; adapters switched on now are applied when it loads.</source>
            <translation>尚未加载模型。请加载一个模型，以查看哪些适配器与之匹配并应用它们；现在开启的适配器会在模型加载时应用。</translation>
        </message>
        <message>
            <source>Applying once the answer is written…</source>
            <translation>将在回答完成后应用…</translation>
        </message>
        <message>
            <source>Applying…</source>
            <translation>正在应用…</translation>
        </message>
        <message>
            <source>Applied in %1 ms, without reloading the model.</source>
            <translation>已在 %1 毫秒内应用，无需重新加载模型。</translation>
        </message>
        <message>
            <source>Apply %1</source>
            <translation>应用 %1</translation>
        </message>
        <message>
            <source>Remove from this list</source>
            <translation>从此列表中移除</translation>
        </message>
        <message>
            <source>PEFT folder</source>
            <translation>PEFT 文件夹</translation>
        </message>
        <message>
            <source>GGUF file</source>
            <translation>GGUF 文件</translation>
        </message>
        <message numerus="yes">
            <source>%1 · rank %2 · %3 · %n layer(s) · %4</source>
            <translation>
                <numerusform>%1 · 秩 %2 · %3 · %n 层 · %4</numerusform>
            </translation>
        </message>
        <message>
            <source>Cannot be applied to the loaded model: %1</source>
            <translation>无法应用于已加载的模型：%1</translation>
        </message>
        <message>
            <source>Weight</source>
            <translation>权重</translation>
        </message>
        <message>
            <source>Weight of %1</source>
            <translation>%1 的权重</translation>
        </message>
        <message>
            <source>Not applied: %1</source>
            <translation>未应用：%1</translation>
        </message>
        <message>
            <source>Applied with weight %1.</source>
            <translation>已以权重 %1 应用。</translation>
        </message>
        <message>
            <source>Not applied yet.</source>
            <translation>尚未应用。</translation>
        </message>
        <message>
            <source>Looking for adapters…</source>
            <translation>正在查找适配器…</translation>
        </message>
        <message>
            <source>No adapters found in %1. Put PEFT adapter folders (with adapter_config.json) or GGUF adapters there, or add one.</source>
            <translation>在 %1 中未找到适配器。请将 PEFT 适配器文件夹（含 adapter_config.json）或 GGUF 适配器放在该处，或添加一个。</translation>
        </message>
        <message>
            <source>Add…</source>
            <translation>添加…</translation>
        </message>
        <message>
            <source>Add an adapter from another folder</source>
            <translation>从其他文件夹添加适配器</translation>
        </message>
        <message>
            <source>Look again</source>
            <translation>重新查找</translation>
        </message>
        <message>
            <source>Look for adapters again</source>
            <translation>重新查找适配器</translation>
        </message>
        <message>
            <source>Add a LoRA adapter</source>
            <translation>添加 LoRA 适配器</translation>
        </message>
        <message>
            <source>GGUF adapters (*.gguf)</source>
            <translation>GGUF 适配器 (*.gguf)</translation>
        </message>
        <message>
            <source>PEFT adapter configuration (adapter_config.json)</source>
            <translation>PEFT 适配器配置 (adapter_config.json)</translation>
        </message>
    </context>
    <context>
        <name>ChatExport</name>
        <message>
            <source>You</source>
            <translation>您</translation>
        </message>
        <message>
            <source>Assistant</source>
            <translation>助手</translation>
        </message>
        <message>
            <source>System</source>
            <translation>系统</translation>
        </message>
        <message>
            <source>Exported from Hearth on %1</source>
            <translation>于 %1 从 Hearth 导出</translation>
        </message>
        <message>
            <source>System prompt</source>
            <translation>系统提示词</translation>
        </message>
        <message>
            <source>(answer interrupted)</source>
            <translation>（回答被中断）</translation>
        </message>
        <message>
            <source>%1 tokens, %2 tokens/s</source>
            <translation>%1 个词元，%2 词元/秒</translation>
        </message>
        <message>
            <source>Adapters: %1</source>
            <translation>适配器：%1</translation>
        </message>
    </context>
    <context>
        <name>ChatView</name>
        <message>
            <source>Chat</source>
            <translation>聊天</translation>
        </message>
        <message>
            <source>New chat</source>
            <translation>新对话</translation>
        </message>
        <message>
            <source>System prompt and sampling of this conversation</source>
            <translation>此对话的系统提示词和采样设置</translation>
        </message>
        <message>
            <source>Messages</source>
            <translation>消息</translation>
        </message>
        <message>
            <source>What can I help you with?</source>
            <translation>有什么可以帮您？</translation>
        </message>
        <message>
            <source>Everything runs on this computer. Your conversations stay here.</source>
            <translation>一切都在这台电脑上运行。您的对话只保存在这里。</translation>
        </message>
        <message>
            <source>Load a model to start: it runs entirely on this computer.</source>
            <translation>加载一个模型即可开始：它完全在这台电脑上运行。</translation>
        </message>
        <message>
            <source>Choose a model…</source>
            <translation>选择模型…</translation>
        </message>
        <message>
            <source>Choose a model to load</source>
            <translation>选择要加载的模型</translation>
        </message>
    </context>
    <context>
        <name>CodeBlock</name>
        <message>
            <source>Code block, %1</source>
            <translation>代码块，%1</translation>
        </message>
        <message>
            <source>Code block</source>
            <translation>代码块</translation>
        </message>
        <message>
            <source>code</source>
            <translation>代码</translation>
        </message>
        <message>
            <source>Copied</source>
            <translation>已复制</translation>
        </message>
        <message>
            <source>Copy</source>
            <translation>复制</translation>
        </message>
        <message>
            <source>Copy code</source>
            <translation>复制代码</translation>
        </message>
        <message>
            <source>Code</source>
            <translation>代码</translation>
        </message>
    </context>
    <context>
        <name>Composer</name>
        <message>
            <source>Message Hearth…</source>
            <translation>给 Hearth 发消息…</translation>
        </message>
        <message>
            <source>Load a model to start chatting</source>
            <translation>加载模型后即可开始聊天</translation>
        </message>
        <message>
            <source>Message</source>
            <translation>消息</translation>
        </message>
        <message>
            <source>Enter sends, Shift+Enter starts a new line</source>
            <translation>按 Enter 发送，Shift+Enter 换行</translation>
        </message>
        <message>
            <source>Send</source>
            <translation>发送</translation>
        </message>
        <message>
            <source>Send message (Enter)</source>
            <translation>发送消息（Enter）</translation>
        </message>
        <message>
            <source>Send (Enter)</source>
            <translation>发送（Enter）</translation>
        </message>
        <message>
            <source>Stop</source>
            <translation>停止</translation>
        </message>
        <message>
            <source>Stop generating (Esc)</source>
            <translation>停止生成（Esc）</translation>
        </message>
        <message>
            <source>Stop (Esc)</source>
            <translation>停止（Esc）</translation>
        </message>
        <message>
            <source>No model is loaded.</source>
            <translation>未加载模型。</translation>
        </message>
        <message>
            <source>Answers come from a language model and can be wrong.</source>
            <translation>回答由语言模型生成，可能有误。</translation>
        </message>
        <message>
            <source>Hearth is answering…</source>
            <translation>Hearth 正在回答…</translation>
        </message>
        <message>
            <source>Loading the model…</source>
            <translation>正在加载模型…</translation>
        </message>
    </context>
    <context>
        <name>ConversationSettingsDialog</name>
        <message>
            <source>Conversation settings</source>
            <translation>对话设置</translation>
        </message>
        <message>
            <source>System prompt</source>
            <translation>系统提示词</translation>
        </message>
        <message>
            <source>Instructions the model follows throughout this conversation</source>
            <translation>模型在整个对话中遵循的指令</translation>
        </message>
        <message>
            <source>Use its own sampling settings</source>
            <translation>使用单独的采样设置</translation>
        </message>
    </context>
    <context>
        <name>ErrorDialog</name>
        <message>
            <source>Needed</source>
            <translation>所需</translation>
        </message>
        <message>
            <source>Free</source>
            <translation>可用</translation>
        </message>
        <message>
            <source>Device</source>
            <translation>设备</translation>
        </message>
        <message>
            <source>Try a smaller maximum sequence length or cache, the CPU, or a more strongly quantized version of the model.</source>
            <translation>请尝试更小的最大序列长度或缓存、改用 CPU，或使用量化程度更高的模型版本。</translation>
        </message>
        <message>
            <source>Copy details</source>
            <translation>复制详细信息</translation>
        </message>
        <message>
            <source>Copy the error details</source>
            <translation>复制错误详细信息</translation>
        </message>
    </context>
    <context>
        <name>ExportDialog</name>
        <message>
            <source>Export as Markdown</source>
            <translation>导出为 Markdown</translation>
        </message>
        <message>
            <source>Export as JSON</source>
            <translation>导出为 JSON</translation>
        </message>
        <message>
            <source>Markdown (*.md)</source>
            <translation>Markdown（*.md）</translation>
        </message>
        <message>
            <source>JSON (*.json)</source>
            <translation>JSON（*.json）</translation>
        </message>
    </context>
    <context>
        <name>ImportDialog</name>
        <message>
            <source>Import a conversation</source>
            <translation>导入对话</translation>
        </message>
        <message>
            <source>Hearth conversations (*.json)</source>
            <translation>Hearth 对话（*.json）</translation>
        </message>
    </context>
    <context>
        <name>LibraryDialog</name>
        <message>
            <source>Model library</source>
            <translation>模型库</translation>
        </message>
        <message>
            <source>Import a GGUF file…</source>
            <translation>导入 GGUF 文件…</translation>
        </message>
        <message>
            <source>Import a model folder…</source>
            <translation>导入模型文件夹…</translation>
        </message>
        <message>
            <source>Looking for models</source>
            <translation>正在查找模型</translation>
        </message>
        <message>
            <source>Look for models again</source>
            <translation>重新查找模型</translation>
        </message>
        <message>
            <source>Quantize…</source>
            <translation>量化…</translation>
        </message>
        <message>
            <source>Models</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>%1 · %2 parameters · %3 bits per weight · %4 · context %5</source>
            <translation>%1 · %2 参数 · 每权重 %3 位 · %4 · 上下文 %5</translation>
        </message>
        <message>
            <source>Use</source>
            <translation>使用</translation>
        </message>
        <message>
            <source>Use %1</source>
            <translation>使用 %1</translation>
        </message>
        <message>
            <source>Remove %1 from the library (the files stay on disk)</source>
            <translation>从模型库中移除 %1（文件仍保留在磁盘上）</translation>
        </message>
        <message>
            <source>No models yet. Put GGUF files or model folders into %1, add a folder below, or import a model.</source>
            <translation>还没有模型。请将 GGUF 文件或模型文件夹放入 %1，在下方添加文件夹，或导入模型。</translation>
        </message>
        <message>
            <source>Folders</source>
            <translation>文件夹</translation>
        </message>
        <message>
            <source>%1 (default)</source>
            <translation>%1（默认）</translation>
        </message>
        <message>
            <source>Stop looking in %1</source>
            <translation>不再在 %1 中查找</translation>
        </message>
        <message>
            <source>Add a folder…</source>
            <translation>添加文件夹…</translation>
        </message>
        <message>
            <source>Import a GGUF model</source>
            <translation>导入 GGUF 模型</translation>
        </message>
        <message>
            <source>GGUF models (*.gguf)</source>
            <translation>GGUF 模型（*.gguf）</translation>
        </message>
        <message>
            <source>This model cannot be imported.</source>
            <translation>无法导入此模型。</translation>
        </message>
        <message>
            <source>Add a folder of models</source>
            <translation>添加模型文件夹</translation>
        </message>
        <message>
            <source>Import a model folder</source>
            <translation>导入模型文件夹</translation>
        </message>
        <message>
            <source>Quantizing… %1 %</source>
            <translation>正在量化… %1 %</translation>
        </message>
        <message>
            <source>Show the running quantization</source>
            <translation>显示正在进行的量化</translation>
        </message>
        <message>
            <source>Quantize a model</source>
            <translation>量化模型</translation>
        </message>
    </context>
    <context>
        <name>LivePanel</name>
        <message>
            <source>Load a model to see its memory use and speed here.</source>
            <translation>加载模型后，可在此查看其内存占用和速度。</translation>
        </message>
        <message>
            <source>Memory on %1</source>
            <translation>%1 上的内存</translation>
        </message>
        <message>
            <source>Memory</source>
            <translation>内存</translation>
        </message>
        <message>
            <source>Weights</source>
            <translation>权重</translation>
        </message>
        <message>
            <source>Cache</source>
            <translation>缓存</translation>
        </message>
        <message>
            <source>Activations</source>
            <translation>激活值</translation>
        </message>
        <message>
            <source>Workspace</source>
            <translation>工作区</translation>
        </message>
        <message>
            <source>Hearth uses %1 · %2 free of %3</source>
            <translation>Hearth 占用 %1 · 共 %3，可用 %2</translation>
        </message>
        <message>
            <source>Speed</source>
            <translation>速度</translation>
        </message>
        <message>
            <source>Prompt</source>
            <translation>提示词</translation>
        </message>
        <message>
            <source>Generation</source>
            <translation>生成</translation>
        </message>
        <message>
            <source>Context</source>
            <translation>上下文</translation>
        </message>
        <message>
            <source>Context used</source>
            <translation>已用上下文</translation>
        </message>
        <message>
            <source>%1 of %2 tokens used by the last answer</source>
            <translation>上一次回答使用了 %1 / %2 个词元</translation>
        </message>
        <message>
            <source>%1 tokens, %2 tokens/s</source>
            <translation>%1 个词元，%2 词元/秒</translation>
        </message>
        <message>
            <source>%1 tokens, processing…</source>
            <translation>%1 个词元，处理中…</translation>
        </message>
        <message>
            <source>%1 tokens</source>
            <translation>%1 个词元</translation>
        </message>
        <message>
            <source>%1 of %2 tokens used by this answer</source>
            <translation>本次回答使用了 %1 / %2 个词元</translation>
        </message>
        <message>
            <source>Prompt cache</source>
            <translation>提示缓存</translation>
        </message>
        <message>
            <source>reused %1 of %2 prompt tokens</source>
            <translation>重用了 %2 个提示词元中的 %1 个</translation>
        </message>
        <message>
            <source>Speculation</source>
            <translation>推测解码</translation>
        </message>
        <message>
            <source>kept %1 of %2 proposed tokens (%3 %)</source>
            <translation>保留了 %2 个候选词元中的 %1 个（%3 %）</translation>
        </message>
    </context>
    <context>
        <name>GpuNotice</name>
        <message>
            <source>Hearth runs models on the CPU on this computer</source>
            <translation>Hearth 在这台电脑上使用 CPU 运行模型</translation>
        </message>
        <message>
            <source>OK</source>
            <translation>确定</translation>
        </message>
        <message>
            <source>Dismiss the GPU notice</source>
            <translation>关闭 GPU 提示</translation>
        </message>
    </context>
    <context>
        <name>LoadPanel</name>
        <message>
            <source>Model</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>No models found</source>
            <translation>未找到模型</translation>
        </message>
        <message>
            <source>Model to load</source>
            <translation>要加载的模型</translation>
        </message>
        <message>
            <source>Open a model file or folder…</source>
            <translation>打开模型文件或文件夹…</translation>
        </message>
        <message>
            <source>%1 · %2 parameters · %3 bits per weight · %4 on disk · trained for %5 tokens</source>
            <translation>%1 · %2 参数 · 每权重 %3 位 · 磁盘占用 %4 · 训练上下文 %5 词元</translation>
        </message>
        <message>
            <source>Device</source>
            <translation>设备</translation>
        </message>
        <message>
            <source>GPU</source>
            <translation>GPU</translation>
        </message>
        <message>
            <source>Run on the GPU</source>
            <translation>在 GPU 上运行</translation>
        </message>
        <message>
            <source>CPU</source>
            <translation>CPU</translation>
        </message>
        <message>
            <source>Run on the CPU</source>
            <translation>在 CPU 上运行</translation>
        </message>
        <message>
            <source>Context</source>
            <translation>上下文</translation>
        </message>
        <message>
            <source>Maximum sequence length</source>
            <translation>最大序列长度</translation>
        </message>
        <message>
            <source>Maximum sequence length in tokens</source>
            <translation>最大序列长度（词元）</translation>
        </message>
        <message>
            <source>Longer than the %1 tokens the model was trained for: choose a RoPE scaling, or expect poor answers past that length.</source>
            <translation>超过了模型训练时的 %1 个词元：请选择一种 RoPE 缩放，否则超出该长度后回答质量会下降。</translation>
        </message>
        <message>
            <source>Cache size (tokens)</source>
            <translation>缓存大小（词元）</translation>
        </message>
        <message>
            <source>Automatic</source>
            <translation>自动</translation>
        </message>
        <message>
            <source>0 sizes the cache for the maximum sequence length.</source>
            <translation>0 表示按最大序列长度确定缓存大小。</translation>
        </message>
        <message>
            <source>Cache size in tokens, 0 for automatic</source>
            <translation>缓存大小（词元），0 表示自动</translation>
        </message>
        <message>
            <source>RoPE scaling</source>
            <translation>RoPE 缩放</translation>
        </message>
        <message>
            <source>As the model specifies (%1)</source>
            <translation>按模型设定（%1）</translation>
        </message>
        <message>
            <source>none</source>
            <translation>无</translation>
        </message>
        <message>
            <source>None</source>
            <translation>无</translation>
        </message>
        <message>
            <source>Linear</source>
            <translation>线性</translation>
        </message>
        <message>
            <source>NTK-aware (alpha)</source>
            <translation>NTK 感知（alpha）</translation>
        </message>
        <message>
            <source>YaRN</source>
            <translation>YaRN</translation>
        </message>
        <message>
            <source>Llama 3</source>
            <translation>Llama 3</translation>
        </message>
        <message>
            <source>RoPE scaling method</source>
            <translation>RoPE 缩放方式</translation>
        </message>
        <message>
            <source>Scaling factor</source>
            <translation>缩放因子</translation>
        </message>
        <message>
            <source>How many times the trained context the model should reach.</source>
            <translation>模型应达到训练上下文长度的多少倍。</translation>
        </message>
        <message>
            <source>Alpha</source>
            <translation>Alpha</translation>
        </message>
        <message>
            <source>NTK-aware scaling of the rotary base; 1 changes nothing.</source>
            <translation>对旋转位置编码基数进行 NTK 感知缩放；1 表示不变。</translation>
        </message>
        <message>
            <source>Original context</source>
            <translation>原始上下文</translation>
        </message>
        <message>
            <source>Low-frequency factor</source>
            <translation>低频因子</translation>
        </message>
        <message>
            <source>High-frequency factor</source>
            <translation>高频因子</translation>
        </message>
        <message>
            <source>Beta fast</source>
            <translation>Beta 快</translation>
        </message>
        <message>
            <source>Beta slow</source>
            <translation>Beta 慢</translation>
        </message>
        <message>
            <source>Memory</source>
            <translation>内存</translation>
        </message>
        <message>
            <source>Weights</source>
            <translation>权重</translation>
        </message>
        <message>
            <source>Cache</source>
            <translation>缓存</translation>
        </message>
        <message>
            <source>Activations</source>
            <translation>激活值</translation>
        </message>
        <message>
            <source>Workspace</source>
            <translation>工作区</translation>
        </message>
        <message>
            <source>Working out the memory plan…</source>
            <translation>正在计算内存方案…</translation>
        </message>
        <message>
            <source>Choose a model to see what it needs.</source>
            <translation>选择模型以查看其所需资源。</translation>
        </message>
        <message>
            <source>Needs %1 of %2 free on %3.</source>
            <translation>需要 %1，%3 上可用 %2。</translation>
        </message>
        <message>
            <source>It does not fit.</source>
            <translation>内存不足。</translation>
        </message>
        <message>
            <source>Load instead</source>
            <translation>改为加载此模型</translation>
        </message>
        <message>
            <source>Reload with these settings</source>
            <translation>按这些设置重新加载</translation>
        </message>
        <message>
            <source>Load</source>
            <translation>加载</translation>
        </message>
        <message>
            <source>Load the model with these settings</source>
            <translation>使用这些设置加载模型</translation>
        </message>
        <message>
            <source>Cancel loading</source>
            <translation>取消加载</translation>
        </message>
        <message>
            <source>Load progress</source>
            <translation>加载进度</translation>
        </message>
        <message>
            <source>Open a model</source>
            <translation>打开模型</translation>
        </message>
        <message>
            <source>GGUF models (*.gguf)</source>
            <translation>GGUF 模型（*.gguf）</translation>
        </message>
        <message>
            <source>Model configuration (config.json)</source>
            <translation>模型配置（config.json）</translation>
        </message>
        <message>
            <source>The loaded model runs with this length.</source>
            <translation>已加载的模型正以此长度运行。</translation>
        </message>
        <message>
            <source>The loaded model runs with %1 tokens; this length applies when you reload.</source>
            <translation>已加载的模型正以 %1 个词元运行；此长度在重新加载后生效。</translation>
        </message>
        <message>
            <source>Speculative decoding</source>
            <translation>推测解码</translation>
        </message>
        <message>
            <source>From the conversation&apos;s own text</source>
            <translation>来自对话自身的文本</translation>
        </message>
        <message>
            <source>Off</source>
            <translation>关闭</translation>
        </message>
        <message>
            <source>Guesses the next tokens from earlier text and keeps those the model agrees with: answers that repeat the conversation (code edits, quotes, summaries) come faster; the answers themselves do not change.</source>
            <translation>根据之前的文本猜测接下来的词元，并保留模型认可的部分：重复对话内容的回答（代码修改、引用、摘要）会更快；回答本身不会改变。</translation>
        </message>
        <message>
            <source>Every token is computed one step at a time.</source>
            <translation>每个词元逐步单独计算。</translation>
        </message>
        <message>
            <source>With a smaller draft model</source>
            <translation>使用较小的草稿模型</translation>
        </message>
        <message>
            <source>Choose a draft model</source>
            <translation>选择草稿模型</translation>
        </message>
        <message>
            <source>Draft model</source>
            <translation>草稿模型</translation>
        </message>
        <message>
            <source>A smaller model with the same vocabulary guesses the next tokens; the model keeps those it agrees with. The answers do not change.</source>
            <translation>一个词表相同的较小模型猜测接下来的词元；模型保留它认可的部分。回答不会改变。</translation>
        </message>
        <message>
            <source>Adapters</source>
            <translation>适配器</translation>
        </message>
        <message>
            <source>An active adapter cannot be applied to this model; it loads without it: %1</source>
            <translation>有一个已开启的适配器无法应用于此模型；模型将在不使用它的情况下加载：%1</translation>
        </message>
        <message>
            <source>KV cache</source>
            <translation>KV 缓存</translation>
        </message>
        <message>
            <source>fp16 (full precision)</source>
            <translation>fp16（全精度）</translation>
        </message>
        <message>
            <source>q8</source>
            <translation>q8</translation>
        </message>
        <message>
            <source>q6</source>
            <translation>q6</translation>
        </message>
        <message>
            <source>q4</source>
            <translation>q4</translation>
        </message>
        <message>
            <source>KV cache precision</source>
            <translation>KV 缓存精度</translation>
        </message>
        <message>
            <source>Quantized caches hold about 1.9× (q8), 2.5× (q6) or 3.6× (q4) the tokens of fp16 in the same memory, with a small loss of quality (q8: nearly none).</source>
            <translation>量化缓存在同样的内存中可容纳约为 fp16 的 1.9 倍（q8）、2.5 倍（q6）或 3.6 倍（q4）的词元，质量略有损失（q8 几乎没有）。</translation>
        </message>
        <message>
            <source>Holds about 1.9× the tokens of fp16 in the same memory, with nearly no loss of quality.</source>
            <translation>在同样的内存中可容纳约为 fp16 的 1.9 倍的词元，质量几乎没有损失。</translation>
        </message>
        <message>
            <source>Holds about 2.5× the tokens of fp16 in the same memory, with a small loss of quality.</source>
            <translation>在同样的内存中可容纳约为 fp16 的 2.5 倍的词元，质量略有损失。</translation>
        </message>
        <message>
            <source>Holds about 3.6× the tokens of fp16 in the same memory, with a small loss of quality.</source>
            <translation>在同样的内存中可容纳约为 fp16 的 3.6 倍的词元，质量略有损失。</translation>
        </message>
        <message>
            <source>Cache: %1 — no memory is left for it.</source>
            <translation>缓存：%1 —— 已没有剩余内存可用。</translation>
        </message>
        <message>
            <source>Cache: %1 — about %2 tokens fit</source>
            <translation>缓存：%1 —— 约可容纳 %2 个词元</translation>
        </message>
        <message>
            <source>GPUs</source>
            <translation>GPU</translation>
        </message>
        <message>
            <source>One GPU</source>
            <translation>单个 GPU</translation>
        </message>
        <message>
            <source>Split by layers</source>
            <translation>按层拆分</translation>
        </message>
        <message>
            <source>Each GPU runs a run of consecutive layers and keeps their cache: models larger than one card fit, at about one card&apos;s speed.</source>
            <translation>每个 GPU 运行一段连续的层并保存其缓存：单张显卡放不下的模型也能运行，速度约与单张显卡相当。</translation>
        </message>
        <message>
            <source>Tensor parallel</source>
            <translation>张量并行</translation>
        </message>
        <message>
            <source>Every GPU runs its share of each layer&apos;s heads and MLP at the same time: faster generation, the cache divided between the cards.</source>
            <translation>每块 GPU 同时计算每一层的一部分注意力头和 MLP：生成更快，缓存分布在各张卡上。</translation>
        </message>
        <message>
            <source>Use %1</source>
            <translation>使用 %1</translation>
        </message>
        <message>
            <source>GiB on %1</source>
            <translation>%1 上的 GiB</translation>
        </message>
        <message>
            <source>GiB</source>
            <translation>GiB</translation>
        </message>
        <message>
            <source>Set how much each GPU takes</source>
            <translation>设置每个 GPU 承担多少</translation>
        </message>
        <message>
            <source>Layers fill each GPU in the order ticked, up to its size; the last GPU also holds the output layer.</source>
            <translation>各层按勾选顺序填充每个 GPU，直至其设定大小；最后一个 GPU 还承载输出层。</translation>
        </message>
        <message>
            <source>Layers are shared in proportion to each GPU&apos;s free memory, in the order ticked.</source>
            <translation>各层按每个 GPU 的空闲显存比例、按勾选顺序分配。</translation>
        </message>
        <message>
            <source>%1 — layers %2–%3: %4 of %5 free</source>
            <translation>%1 — 第 %2–%3 层：需要 %4，空闲 %5</translation>
        </message>
    </context>
    <context>
        <name>Main</name>
        <message>
            <source>%1 — Hearth</source>
            <translation>%1 — Hearth</translation>
        </message>
        <message>
            <source>Your conversation history could not be opened.</source>
            <translation>无法打开您的对话历史。</translation>
        </message>
        <message>
            <source>Conversations of this session will not be saved.</source>
            <translation>本次会话中的对话将不会被保存。</translation>
        </message>
        <message>
            <source>The conversation could not be exported.</source>
            <translation>无法导出对话。</translation>
        </message>
        <message>
            <source>The conversation could not be imported.</source>
            <translation>无法导入对话。</translation>
        </message>
        <message>
            <source>Something went wrong.</source>
            <translation>出现了问题。</translation>
        </message>
        <message>
            <source>Quantizing… %1 %</source>
            <translation>正在量化… %1 %</translation>
        </message>
        <message>
            <source>Quantization finished</source>
            <translation>量化已结束</translation>
        </message>
        <message>
            <source>Show the running quantization</source>
            <translation>显示正在进行的量化</translation>
        </message>
        <message>
            <source>Show the result of the quantization</source>
            <translation>显示量化结果</translation>
        </message>
    </context>
    <context>
        <name>MemoryBar</name>
        <message>
            <source>Memory: %1 of %2</source>
            <translation>内存：%1 / %2</translation>
        </message>
    </context>
    <context>
        <name>MessageDelegate</name>
        <message>
            <source>You</source>
            <translation>您</translation>
        </message>
        <message>
            <source>Assistant</source>
            <translation>助手</translation>
        </message>
        <message>
            <source>Your message</source>
            <translation>您的消息</translation>
        </message>
        <message>
            <source>Edit your message</source>
            <translation>编辑您的消息</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>Send again</source>
            <translation>重新发送</translation>
        </message>
        <message>
            <source>The model is thinking</source>
            <translation>模型正在思考</translation>
        </message>
        <message>
            <source>This answer was interrupted.</source>
            <translation>此回答被中断了。</translation>
        </message>
        <message numerus="yes">
            <source>%n token(s)</source>
            <translation>
                <numerusform>%n 个词元</numerusform>
            </translation>
        </message>
        <message>
            <source>%1 tokens/s</source>
            <translation>%1 词元/秒</translation>
        </message>
        <message>
            <source>prompt %1 tokens/s</source>
            <translation>提示词 %1 词元/秒</translation>
        </message>
        <message>
            <source>stopped</source>
            <translation>已停止</translation>
        </message>
        <message>
            <source>cut at the token limit</source>
            <translation>已达词元上限而截断</translation>
        </message>
        <message>
            <source>Copy message</source>
            <translation>复制消息</translation>
        </message>
        <message>
            <source>Edit and send again</source>
            <translation>编辑并重新发送</translation>
        </message>
        <message>
            <source>Regenerate the answer</source>
            <translation>重新生成回答</translation>
        </message>
        <message>
            <source>%1 × %2</source>
            <translation>%1 × %2</translation>
        </message>
        <message>
            <source>LoRA %1</source>
            <translation>LoRA %1</translation>
        </message>
        <message>
            <source>LoRA adapters: %1</source>
            <translation>LoRA 适配器：%1</translation>
        </message>
    </context>
    <context>
        <name>ModelBar</name>
        <message>
            <source>Show or hide conversations (Ctrl+B)</source>
            <translation>显示或隐藏对话列表（Ctrl+B）</translation>
        </message>
        <message>
            <source>Loading… %1</source>
            <translation>正在加载… %1</translation>
        </message>
        <message>
            <source>No model loaded</source>
            <translation>未加载模型</translation>
        </message>
        <message>
            <source>%1 · %2 · %3 tokens</source>
            <translation>%1 · %2 · %3 词元</translation>
        </message>
        <message>
            <source>Load progress</source>
            <translation>加载进度</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>Cancel loading</source>
            <translation>取消加载</translation>
        </message>
        <message>
            <source>Unload</source>
            <translation>卸载</translation>
        </message>
        <message>
            <source>Unload the model</source>
            <translation>卸载模型</translation>
        </message>
        <message>
            <source>Load a model…</source>
            <translation>加载模型…</translation>
        </message>
        <message>
            <source>Load a model</source>
            <translation>加载模型</translation>
        </message>
        <message>
            <source>%1 tokens/s</source>
            <translation>%1 词元/秒</translation>
        </message>
        <message>
            <source>Model library (Ctrl+L)</source>
            <translation>模型库（Ctrl+L）</translation>
        </message>
        <message>
            <source>Show or hide the model and performance panel</source>
            <translation>显示或隐藏模型与性能面板</translation>
        </message>
        <message>
            <source>Settings (Ctrl+,)</source>
            <translation>设置（Ctrl+,）</translation>
        </message>
    </context>
    <context>
        <name>QObject</name>
        <message>
            <source>Cannot write %1: %2</source>
            <translation>无法写入 %1：%2</translation>
        </message>
    </context>
    <context>
        <name>QuantizeCalibrationPage</name>
        <message>
            <source>Which text should the quantizer learn from?</source>
            <translation>量化器应从哪些文本中学习？</translation>
        </message>
        <message>
            <source>The quantizer runs the model over this text and keeps what matters for it. Text like the model's later use gives the best results.</source>
            <translation>量化器让模型处理这些文本，并保留对其重要的信息。与模型日后用途相似的文本效果最好。</translation>
        </message>
        <message>
            <source>Hearth's built-in set</source>
            <translation>Hearth 内置数据集</translation>
        </message>
        <message>
            <source>Use Hearth's built-in calibration set</source>
            <translation>使用 Hearth 内置的校准数据集</translation>
        </message>
        <message>
            <source>English prose, technical writing, Python and other code, several languages and chat conversations, all freely licensed.</source>
            <translation>英文散文、技术文档、Python 及其他代码、多种语言和聊天对话，均为自由许可。</translation>
        </message>
        <message>
            <source>A file of my own</source>
            <translation>我自己的文件</translation>
        </message>
        <message>
            <source>Use a calibration file of my own</source>
            <translation>使用我自己的校准文件</translation>
        </message>
        <message>
            <source>Path to a .txt, .md or .jsonl file</source>
            <translation>.txt、.md 或 .jsonl 文件的路径</translation>
        </message>
        <message>
            <source>Path of the calibration file</source>
            <translation>校准文件的路径</translation>
        </message>
        <message>
            <source>Choose…</source>
            <translation>选择…</translation>
        </message>
        <message>
            <source>Choose a calibration file</source>
            <translation>选择校准文件</translation>
        </message>
        <message>
            <source>Plain text or Markdown is read as it is. In JSON Lines, each line is an object with a "text" field, or a "messages" list of chat turns, which is written out with the model's chat template.</source>
            <translation>纯文本或 Markdown 按原样读取。在 JSON Lines 中，每一行是一个对象，包含 "text" 字段，或包含一个由聊天轮次组成的 "messages" 列表，后者会用模型的聊天模板展开。</translation>
        </message>
        <message>
            <source>Amount</source>
            <translation>数量</translation>
        </message>
        <message>
            <source>Rows</source>
            <translation>行数</translation>
        </message>
        <message>
            <source>Automatic</source>
            <translation>自动</translation>
        </message>
        <message>
            <source>Rows of calibration text, 0 for automatic</source>
            <translation>校准文本的行数，0 表示自动</translation>
        </message>
        <message>
            <source>Tokens per row</source>
            <translation>每行词元数</translation>
        </message>
        <message>
            <source>Tokens per calibration row, 0 for automatic</source>
            <translation>每个校准行的词元数，0 表示自动</translation>
        </message>
        <message>
            <source>Automatic takes more text on the GPU than on the CPU. More text is slower and usually a little better.</source>
            <translation>“自动”在 GPU 上使用的文本比在 CPU 上多。文本越多越慢，效果通常也略好。</translation>
        </message>
        <message>
            <source>Text (*.txt *.md *.jsonl)</source>
            <translation>文本（*.txt *.md *.jsonl）</translation>
        </message>
    </context>
    <context>
        <name>QuantizeDialog</name>
        <message>
            <source>Quantize a model</source>
            <translation>量化模型</translation>
        </message>
        <message>
            <source>Hide</source>
            <translation>隐藏</translation>
        </message>
        <message>
            <source>Close</source>
            <translation>关闭</translation>
        </message>
        <message>
            <source>Hide the wizard; the job goes on</source>
            <translation>隐藏向导；任务会继续运行</translation>
        </message>
        <message>
            <source>Close the wizard</source>
            <translation>关闭向导</translation>
        </message>
        <message>
            <source>The job goes on when you hide this window.</source>
            <translation>隐藏此窗口后任务仍会继续运行。</translation>
        </message>
        <message>
            <source>Back</source>
            <translation>上一步</translation>
        </message>
        <message>
            <source>Back to the previous step</source>
            <translation>返回上一步</translation>
        </message>
        <message>
            <source>Next</source>
            <translation>下一步</translation>
        </message>
        <message>
            <source>Go on to the next step</source>
            <translation>进入下一步</translation>
        </message>
        <message>
            <source>Start</source>
            <translation>开始</translation>
        </message>
        <message>
            <source>Start quantizing</source>
            <translation>开始量化</translation>
        </message>
        <message>
            <source>Stopping…</source>
            <translation>正在停止…</translation>
        </message>
        <message>
            <source>Stop</source>
            <translation>停止</translation>
        </message>
        <message>
            <source>Stop the job; it can be resumed later</source>
            <translation>停止任务；之后可以继续</translation>
        </message>
        <message>
            <source>Back to the settings</source>
            <translation>返回设置</translation>
        </message>
        <message>
            <source>Discard</source>
            <translation>丢弃</translation>
        </message>
        <message>
            <source>Discard the stopped job and its intermediate files</source>
            <translation>丢弃已停止的任务及其中间文件</translation>
        </message>
        <message>
            <source>Resume</source>
            <translation>继续</translation>
        </message>
        <message>
            <source>Resume the stopped job</source>
            <translation>继续已停止的任务</translation>
        </message>
        <message>
            <source>Quantize another</source>
            <translation>再量化一个</translation>
        </message>
        <message>
            <source>Start the wizard again</source>
            <translation>重新开始向导</translation>
        </message>
        <message>
            <source>Load now</source>
            <translation>立即加载</translation>
        </message>
        <message>
            <source>Load the quantized model now</source>
            <translation>立即加载量化后的模型</translation>
        </message>
    </context>
    <context>
        <name>QuantizeFormatPage</name>
        <message>
            <source>Which format?</source>
            <translation>选择哪种格式？</translation>
        </message>
        <message>
            <source>EXL2 — the best quality for a size</source>
            <translation>EXL2 —— 同等大小下质量最佳</translation>
        </message>
        <message>
            <source>Each layer gets the bits it needs: Hearth measures every layer's error on calibration text and picks the mix that meets an average you choose, from 2 to 8 bits per weight. Runs in Hearth and ExLlamaV2.</source>
            <translation>每一层获得它所需的位数：Hearth 在校准文本上测量每一层的误差，并选出满足您所选平均值（每权重 2 到 8 位）的组合。可在 Hearth 和 ExLlamaV2 中运行。</translation>
        </message>
        <message>
            <source>GPTQ — the widely supported format</source>
            <translation>GPTQ —— 支持广泛的格式</translation>
        </message>
        <message>
            <source>The same number of bits (2, 3, 4 or 8) for every layer, in groups of weights that share a scale. Runs in Hearth, ExLlama, Transformers, vLLM and most other tools.</source>
            <translation>每一层使用相同的位数（2、3、4 或 8），权重按组共享一个缩放因子。可在 Hearth、ExLlama、Transformers、vLLM 及大多数其他工具中运行。</translation>
        </message>
    </context>
    <context>
        <name>QuantizeJobList</name>
        <message>
            <source>Interrupted job: %1</source>
            <translation>已中断的任务：%1</translation>
        </message>
        <message>
            <source>The job file is damaged: %1</source>
            <translation>任务文件已损坏：%1</translation>
        </message>
        <message>
            <source>From %1 · %2 · stopped while %3 (%4 of %5) · %6 done</source>
            <translation>源自 %1 · %2 · 停止于：%3（%4 / %5）· 已用时 %6</translation>
        </message>
        <message>
            <source>Resume</source>
            <translation>继续</translation>
        </message>
        <message>
            <source>Resume the job for %1</source>
            <translation>继续 %1 的任务</translation>
        </message>
        <message>
            <source>Discard</source>
            <translation>丢弃</translation>
        </message>
        <message>
            <source>Discard the job for %1 and its intermediate files</source>
            <translation>丢弃 %1 的任务及其中间文件</translation>
        </message>
    </context>
    <context>
        <name>QuantizeResultPage</name>
        <message>
            <source>%1 is ready</source>
            <translation>%1 已完成</translation>
        </message>
        <message>
            <source>%1 from %2. It has been added to the model library.</source>
            <translation>%1，源自 %2。已添加到模型库。</translation>
        </message>
        <message>
            <source>Result of the quantization</source>
            <translation>量化结果</translation>
        </message>
        <message>
            <source>Size on disk</source>
            <translation>磁盘占用</translation>
        </message>
        <message>
            <source>(weights %1, estimated %2)</source>
            <translation>（权重 %1，预估 %2）</translation>
        </message>
        <message>
            <source>Bits per weight</source>
            <translation>每权重位数</translation>
        </message>
        <message>
            <source>%1 in the decoder layers, %2 in the output layer</source>
            <translation>解码器层 %1，输出层 %2</translation>
        </message>
        <message>
            <source>Time</source>
            <translation>用时</translation>
        </message>
        <message>
            <source>Perplexity</source>
            <translation>困惑度</translation>
        </message>
        <message>
            <source>%1 (the source: %2, %3)</source>
            <translation>%1（源模型：%2，%3）</translation>
        </message>
        <message>
            <source>KL divergence</source>
            <translation>KL 散度</translation>
        </message>
        <message>
            <source>%1 on average, %2 at the 99.9th percentile</source>
            <translation>平均 %1，第 99.9 百分位 %2</translation>
        </message>
        <message>
            <source>Same top token</source>
            <translation>最可能词元相同</translation>
        </message>
        <message>
            <source>%1 % of %2 positions</source>
            <translation>%2 个位置中的 %1 %</translation>
        </message>
        <message>
            <source>Measured on held-out text that was not part of the calibration. Lower perplexity and KL divergence are better; a KL divergence below 0.05 is hard to notice in use.</source>
            <translation>在未参与校准的保留文本上测得。困惑度和 KL 散度越低越好；KL 散度低于 0.05 时，实际使用中很难察觉差别。</translation>
        </message>
        <message>
            <source>The quality was not measured.</source>
            <translation>未测量质量。</translation>
        </message>
        <message>
            <source>Folder</source>
            <translation>文件夹</translation>
        </message>
        <message>
            <source>Folder of the quantized model</source>
            <translation>量化模型所在的文件夹</translation>
        </message>
    </context>
    <context>
        <name>QuantizeReviewPage</name>
        <message>
            <source>Ready to quantize</source>
            <translation>准备量化</translation>
        </message>
        <message>
            <source>Model</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>Target</source>
            <translation>目标</translation>
        </message>
        <message>
            <source>GPTQ, %1 bits, group size %2%3</source>
            <translation>GPTQ，%1 位，组大小 %2%3</translation>
        </message>
        <message>
            <source>, act-order</source>
            <translation>，act-order</translation>
        </message>
        <message>
            <source>GPTQ, %1 bits, one group per column%2</source>
            <translation>GPTQ，%1 位，每列一组%2</translation>
        </message>
        <message>
            <source>EXL2, %1 bits per weight, head %2 bits</source>
            <translation>EXL2，每权重 %1 位，输出头 %2 位</translation>
        </message>
        <message>
            <source>Estimated size</source>
            <translation>预估大小</translation>
        </message>
        <message>
            <source>≈ %1 on disk, ≈ %2 of GPU memory at %3 tokens</source>
            <translation>磁盘 ≈ %1，%3 词元时 GPU 显存 ≈ %2</translation>
        </message>
        <message>
            <source>Calibration</source>
            <translation>校准</translation>
        </message>
        <message>
            <source>Hearth's built-in set</source>
            <translation>Hearth 内置数据集</translation>
        </message>
        <message>
            <source>Output folder</source>
            <translation>输出文件夹</translation>
        </message>
        <message>
            <source>Folder to write the quantized model to</source>
            <translation>写入量化模型的文件夹</translation>
        </message>
        <message>
            <source>Choose…</source>
            <translation>选择…</translation>
        </message>
        <message>
            <source>Choose the folder to put the quantized model in</source>
            <translation>选择存放量化模型的文件夹</translation>
        </message>
        <message>
            <source>Device</source>
            <translation>设备</translation>
        </message>
        <message>
            <source>GPU</source>
            <translation>GPU</translation>
        </message>
        <message>
            <source>Quantize on the GPU</source>
            <translation>在 GPU 上量化</translation>
        </message>
        <message>
            <source>No CUDA GPU is available here (no device, no driver, or a build without CUDA).</source>
            <translation>此处没有可用的 CUDA GPU（没有设备、没有驱动程序，或此版本不含 CUDA）。</translation>
        </message>
        <message>
            <source>CPU</source>
            <translation>CPU</translation>
        </message>
        <message>
            <source>Quantize on the CPU</source>
            <translation>在 CPU 上量化</translation>
        </message>
        <message>
            <source>Afterwards, measure perplexity and KL divergence against the source on held-out text</source>
            <translation>完成后，在保留文本上测量相对源模型的困惑度和 KL 散度</translation>
        </message>
        <message>
            <source>Measure the quality of the result afterwards</source>
            <translation>完成后测量结果的质量</translation>
        </message>
        <message>
            <source>Where should the quantized model go?</source>
            <translation>量化模型应保存到哪里？</translation>
        </message>
    </context>
    <context>
        <name>QuantizeRunPage</name>
        <message>
            <source>Stopping…</source>
            <translation>正在停止…</translation>
        </message>
        <message>
            <source>Quantizing %1</source>
            <translation>正在量化 %1</translation>
        </message>
        <message>
            <source>Stopped</source>
            <translation>已停止</translation>
        </message>
        <message>
            <source>The job failed</source>
            <translation>任务失败</translation>
        </message>
        <message>
            <source>Stages</source>
            <translation>阶段</translation>
        </message>
        <message>
            <source>done</source>
            <translation>已完成</translation>
        </message>
        <message>
            <source>in progress</source>
            <translation>进行中</translation>
        </message>
        <message>
            <source>waiting</source>
            <translation>等待中</translation>
        </message>
        <message>
            <source>Progress of the whole job</source>
            <translation>整个任务的进度</translation>
        </message>
        <message>
            <source>%1 percent</source>
            <translation>百分之 %1</translation>
        </message>
        <message>
            <source>%1 — step %2 of %3</source>
            <translation>%1 —— 第 %2 步，共 %3 步</translation>
        </message>
        <message>
            <source>%1 %</source>
            <translation>%1 %</translation>
        </message>
        <message>
            <source>Layer %1 of %2 · %3</source>
            <translation>第 %1 层，共 %2 层 · %3</translation>
        </message>
        <message>
            <source>Layers</source>
            <translation>层</translation>
        </message>
        <message>
            <source>Layer %1 of %2</source>
            <translation>第 %1 层，共 %2 层</translation>
        </message>
        <message>
            <source>Elapsed</source>
            <translation>已用时间</translation>
        </message>
        <message>
            <source>Remaining</source>
            <translation>剩余时间</translation>
        </message>
        <message>
            <source>about %1</source>
            <translation>约 %1</translation>
        </message>
        <message>
            <source>working it out…</source>
            <translation>正在估算…</translation>
        </message>
        <message>
            <source>The job was stopped. Its work so far is kept: resume it now or later, even after restarting Hearth.</source>
            <translation>任务已停止。目前的进度会被保留：可以现在或稍后继续，即使重启 Hearth 之后也可以。</translation>
        </message>
        <message>
            <source>The job was stopped before it began.</source>
            <translation>任务在开始前已停止。</translation>
        </message>
        <message>
            <source>The job stopped with an error. Its work so far is kept; once the cause is fixed, it can resume.</source>
            <translation>任务因错误而停止。目前的进度会被保留；排除原因后即可继续。</translation>
        </message>
        <message>
            <source>The job stopped with an error.</source>
            <translation>任务因错误而停止。</translation>
        </message>
        <message>
            <source>Log</source>
            <translation>日志</translation>
        </message>
        <message>
            <source>Messages of the job</source>
            <translation>任务消息</translation>
        </message>
        <message>
            <source>No messages.</source>
            <translation>没有消息。</translation>
        </message>
    </context>
    <context>
        <name>QuantizeSizePage</name>
        <message>
            <source>How many bits per weight?</source>
            <translation>每个权重用多少位？</translation>
        </message>
        <message>
            <source>How many bits, in which groups?</source>
            <translation>用多少位，如何分组？</translation>
        </message>
        <message>
            <source>Bits per weight</source>
            <translation>每权重位数</translation>
        </message>
        <message>
            <source>%1 bpw</source>
            <translation>%1 bpw</translation>
        </message>
        <message>
            <source>Bits per weight, from 2 to 8</source>
            <translation>每权重位数，2 到 8</translation>
        </message>
        <message>
            <source>%1 bits per weight</source>
            <translation>每权重 %1 位</translation>
        </message>
        <message>
            <source>This model allows %1 to %2 bits per weight.</source>
            <translation>此模型允许每权重 %1 到 %2 位。</translation>
        </message>
        <message>
            <source>Output layer (head)</source>
            <translation>输出层（输出头）</translation>
        </message>
        <message>
            <source>Bits of the output layer, which turns hidden states into token scores. It is sensitive: 6 bits is the usual choice.</source>
            <translation>输出层的位数，该层将隐藏状态转换为词元得分。它较为敏感：通常选择 6 位。</translation>
        </message>
        <message>
            <source>%1 bits</source>
            <translation>%1 位</translation>
        </message>
        <message>
            <source>Bits of the output layer</source>
            <translation>输出层的位数</translation>
        </message>
        <message>
            <source>Bits</source>
            <translation>位数</translation>
        </message>
        <message>
            <source>Group size</source>
            <translation>组大小</translation>
        </message>
        <message>
            <source>How many weights share one scale. Smaller groups are more accurate and a little larger.</source>
            <translation>多少个权重共享一个缩放因子。组越小越精确，文件也略大。</translation>
        </message>
        <message>
            <source>One group per column</source>
            <translation>每列一组</translation>
        </message>
        <message>
            <source>Act-order: quantize the most important columns first</source>
            <translation>Act-order：先量化最重要的列</translation>
        </message>
        <message>
            <source>Size on disk</source>
            <translation>磁盘占用</translation>
        </message>
        <message>
            <source>Working out the size</source>
            <translation>正在估算大小</translation>
        </message>
        <message>
            <source>≈ %1</source>
            <translation>≈ %1</translation>
        </message>
        <message>
            <source>The source takes %1 on disk; the decoder's %2 weights become %3 bits each on average.</source>
            <translation>源模型占用磁盘 %1；解码器的 %2 个权重平均每个变为 %3 位。</translation>
        </message>
        <message>
            <source>GPU memory at a context of</source>
            <translation>GPU 显存，上下文长度为</translation>
        </message>
        <message>
            <source>Context length in tokens for the memory estimate</source>
            <translation>用于显存估算的上下文长度（词元）</translation>
        </message>
        <message>
            <source>tokens</source>
            <translation>词元</translation>
        </message>
        <message>
            <source>Weights</source>
            <translation>权重</translation>
        </message>
        <message>
            <source>Cache</source>
            <translation>缓存</translation>
        </message>
        <message>
            <source>Activations</source>
            <translation>激活值</translation>
        </message>
        <message>
            <source>Workspace</source>
            <translation>工作区</translation>
        </message>
        <message>
            <source>Fits: %1 is free on %2 now.</source>
            <translation>可以容纳：%2 当前有 %1 空闲。</translation>
        </message>
        <message>
            <source>Does not fit the %1 free on %2 now: choose fewer bits or a shorter context.</source>
            <translation>无法容纳于 %2 当前空闲的 %1：请选择更少的位数或更短的上下文。</translation>
        </message>
        <message>
            <source>No GPU here to compare with: this is what a GPU would need to run the result with this context.</source>
            <translation>此处没有可供比较的 GPU：这是 GPU 以此上下文运行结果所需的显存。</translation>
        </message>
    </context>
    <context>
        <name>QuantizeSourcePage</name>
        <message>
            <source>Which model do you want to quantize?</source>
            <translation>您想量化哪个模型？</translation>
        </message>
        <message>
            <source>An unquantized model: a folder in the Hugging Face layout (config.json with fp16, bf16 or fp32 safetensors) or a GGUF file.</source>
            <translation>未量化的模型：Hugging Face 布局的文件夹（包含 config.json 和 fp16、bf16 或 fp32 的 safetensors），或 GGUF 文件。</translation>
        </message>
        <message>
            <source>Interrupted jobs</source>
            <translation>已中断的任务</translation>
        </message>
        <message>
            <source>From the library</source>
            <translation>来自模型库</translation>
        </message>
        <message>
            <source>Models in the library that can be quantized</source>
            <translation>模型库中可量化的模型</translation>
        </message>
        <message>
            <source>%1, %2, %3 parameters</source>
            <translation>%1，%2，%3 参数</translation>
        </message>
        <message>
            <source>%1 · %2 parameters · %3</source>
            <translation>%1 · %2 参数 · %3</translation>
        </message>
        <message>
            <source>already quantized GGUF</source>
            <translation>已量化的 GGUF</translation>
        </message>
        <message>
            <source>Looking for models…</source>
            <translation>正在查找模型…</translation>
        </message>
        <message>
            <source>The library has no fp16 or GGUF models. Choose a folder or a file below.</source>
            <translation>模型库中没有 fp16 或 GGUF 模型。请在下方选择文件夹或文件。</translation>
        </message>
        <message>
            <source>Or a folder or file</source>
            <translation>或者选择文件夹或文件</translation>
        </message>
        <message>
            <source>Path to a model folder or a .gguf file</source>
            <translation>模型文件夹或 .gguf 文件的路径</translation>
        </message>
        <message>
            <source>Path of the model to quantize</source>
            <translation>要量化的模型的路径</translation>
        </message>
        <message>
            <source>Folder…</source>
            <translation>文件夹…</translation>
        </message>
        <message>
            <source>Choose a model folder</source>
            <translation>选择模型文件夹</translation>
        </message>
        <message>
            <source>GGUF file…</source>
            <translation>GGUF 文件…</translation>
        </message>
        <message>
            <source>Choose a GGUF file</source>
            <translation>选择 GGUF 文件</translation>
        </message>
        <message>
            <source>Reading the model</source>
            <translation>正在读取模型</translation>
        </message>
        <message>
            <source>Reading the model…</source>
            <translation>正在读取模型…</translation>
        </message>
        <message>
            <source>%1 · %2 · %3 parameters · %4 layers · trained for %5 tokens · %6 on disk</source>
            <translation>%1 · %2 · %3 参数 · %4 层 · 训练上下文 %5 词元 · 磁盘占用 %6</translation>
        </message>
        <message>
            <source>GGUF models (*.gguf)</source>
            <translation>GGUF 模型（*.gguf）</translation>
        </message>
    </context>
    <context>
        <name>QuantizeStepBar</name>
        <message>
            <source>Steps of the quantization</source>
            <translation>量化步骤</translation>
        </message>
        <message>
            <source>Model</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>Format</source>
            <translation>格式</translation>
        </message>
        <message>
            <source>Size</source>
            <translation>大小</translation>
        </message>
        <message>
            <source>Calibration</source>
            <translation>校准</translation>
        </message>
        <message>
            <source>Review</source>
            <translation>确认</translation>
        </message>
        <message>
            <source>Run</source>
            <translation>运行</translation>
        </message>
        <message>
            <source>Result</source>
            <translation>结果</translation>
        </message>
        <message>
            <source>Step %1 of %2: %3</source>
            <translation>第 %1 步，共 %2 步：%3</translation>
        </message>
        <message>
            <source>current step</source>
            <translation>当前步骤</translation>
        </message>
        <message>
            <source>done; go back to it</source>
            <translation>已完成；可返回此步</translation>
        </message>
    </context>
    <context>
        <name>QuantizeText</name>
        <message>
            <source>Preparing</source>
            <translation>准备中</translation>
        </message>
        <message>
            <source>Measuring the layers</source>
            <translation>正在测量各层</translation>
        </message>
        <message>
            <source>Choosing a setting per layer</source>
            <translation>正在为每层选择设置</translation>
        </message>
        <message>
            <source>Quantizing</source>
            <translation>正在量化</translation>
        </message>
        <message>
            <source>Writing the model</source>
            <translation>正在写入模型</translation>
        </message>
        <message>
            <source>Measuring quality</source>
            <translation>正在测量质量</translation>
        </message>
        <message>
            <source>Done</source>
            <translation>完成</translation>
        </message>
        <message>
            <source>unknown</source>
            <translation>未知</translation>
        </message>
        <message>
            <source>%1 s</source>
            <translation>%1 秒</translation>
        </message>
        <message>
            <source>%1 min %2 s</source>
            <translation>%1 分 %2 秒</translation>
        </message>
        <message>
            <source>%1 h %2 min</source>
            <translation>%1 小时 %2 分</translation>
        </message>
    </context>
    <context>
        <name>QuantizeWizard</name>
        <message>
            <source>This model is already quantized (%1). Choose an fp16 model folder or a GGUF file.</source>
            <translation>此模型已经量化（%1）。请选择 fp16 模型文件夹或 GGUF 文件。</translation>
        </message>
        <message>
            <source>This GGUF file is already quantized (%1). Its weights are used as they decode, so the result keeps that quantization's error on top of the new one; start from an F16 or BF16 model when you have one.</source>
            <translation>此 GGUF 文件已经量化（%1）。其权重按解码结果使用，因此结果会在新的误差之外保留原有量化的误差；如有 F16 或 BF16 模型，请从它开始。</translation>
        </message>
    </context>
    <context>
        <name>RateChart</name>
        <message>
            <source>Tokens per second during the answer</source>
            <translation>回答过程中的每秒词元数</translation>
        </message>
    </context>
    <context>
        <name>SamplingEditor</name>
        <message>
            <source>Temperature</source>
            <translation>温度</translation>
        </message>
        <message>
            <source>0 always picks the most likely token; higher values vary more.</source>
            <translation>0 总是选择可能性最大的词元；数值越高变化越大。</translation>
        </message>
        <message>
            <source>Top-k</source>
            <translation>Top-k</translation>
        </message>
        <message>
            <source>Sample among the k most likely tokens; 0 turns it off.</source>
            <translation>在可能性最大的 k 个词元中采样；0 表示关闭。</translation>
        </message>
        <message>
            <source>Top-p</source>
            <translation>Top-p</translation>
        </message>
        <message>
            <source>Sample among the most likely tokens that together reach this probability; 1 turns it off.</source>
            <translation>在累计概率达到该值的最可能词元中采样；1 表示关闭。</translation>
        </message>
        <message>
            <source>Min-p</source>
            <translation>Min-p</translation>
        </message>
        <message>
            <source>Drop tokens less likely than this fraction of the most likely one; 0 turns it off.</source>
            <translation>舍弃概率低于最可能词元该比例的词元；0 表示关闭。</translation>
        </message>
        <message>
            <source>Repetition penalty</source>
            <translation>重复惩罚</translation>
        </message>
        <message>
            <source>Above 1 discourages repeating earlier tokens; 1 turns it off.</source>
            <translation>大于 1 时抑制重复先前的词元；1 表示关闭。</translation>
        </message>
        <message>
            <source>Longest answer (tokens)</source>
            <translation>最长回答（词元）</translation>
        </message>
    </context>
    <context>
        <name>SettingsDialog</name>
        <message>
            <source>Settings</source>
            <translation>设置</translation>
        </message>
        <message>
            <source>Appearance</source>
            <translation>外观</translation>
        </message>
        <message>
            <source>Generation</source>
            <translation>生成</translation>
        </message>
        <message>
            <source>Models</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>Theme</source>
            <translation>主题</translation>
        </message>
        <message>
            <source>Follow the system</source>
            <translation>跟随系统</translation>
        </message>
        <message>
            <source>Light</source>
            <translation>浅色</translation>
        </message>
        <message>
            <source>Dark</source>
            <translation>深色</translation>
        </message>
        <message>
            <source>Theme: %1</source>
            <translation>主题：%1</translation>
        </message>
        <message>
            <source>Text size</source>
            <translation>文字大小</translation>
        </message>
        <message>
            <source>Text size in points</source>
            <translation>文字大小（磅）</translation>
        </message>
        <message>
            <source>%1 pt</source>
            <translation>%1 磅</translation>
        </message>
        <message>
            <source>Language</source>
            <translation>语言</translation>
        </message>
        <message>
            <source>Default sampling for conversations without their own</source>
            <translation>未单独设置的对话所用的默认采样</translation>
        </message>
        <message>
            <source>Restore the defaults</source>
            <translation>恢复默认值</translation>
        </message>
        <message>
            <source>System prompt for new conversations</source>
            <translation>新对话的系统提示词</translation>
        </message>
        <message>
            <source>Folders searched for models</source>
            <translation>查找模型的文件夹</translation>
        </message>
        <message>
            <source>%1 (default)</source>
            <translation>%1（默认）</translation>
        </message>
        <message>
            <source>Stop looking in %1</source>
            <translation>不再在 %1 中查找</translation>
        </message>
        <message>
            <source>Add folders and import single models in the model library (Ctrl+L).</source>
            <translation>请在模型库（Ctrl+L）中添加文件夹或导入单个模型。</translation>
        </message>
        <message>
            <source>Local server</source>
            <translation>本地服务器</translation>
        </message>
        <message>
            <source>Other programs on this computer can use the loaded model through an OpenAI-compatible API. Their requests and your chats run together on the same model; loading another model serves that one.</source>
            <translation>本计算机上的其他程序可以通过兼容 OpenAI 的 API 使用已加载的模型。它们的请求与您的对话在同一个模型上一起运行；加载另一个模型后，服务器将提供该模型。</translation>
        </message>
        <message>
            <source>Let other programs use the loaded model</source>
            <translation>允许其他程序使用已加载的模型</translation>
        </message>
        <message>
            <source>Running: serving %1.</source>
            <translation>运行中：正在提供 %1。</translation>
        </message>
        <message>
            <source>Waiting for a model: the server starts when a model is loaded.</source>
            <translation>等待模型：加载模型后服务器即会启动。</translation>
        </message>
        <message>
            <source>Port %1 is in use by another program or cannot be opened. Choose another port.</source>
            <translation>端口 %1 已被其他程序占用或无法打开。请选择其他端口。</translation>
        </message>
        <message>
            <source>The server could not start: %1</source>
            <translation>服务器无法启动：%1</translation>
        </message>
        <message>
            <source>This build of Hearth has no local server.</source>
            <translation>此版本的 Hearth 不包含本地服务器。</translation>
        </message>
        <message>
            <source>Off.</source>
            <translation>已关闭。</translation>
        </message>
        <message>
            <source>Requests running: %1 · answered: %2</source>
            <translation>进行中的请求：%1 · 已应答：%2</translation>
        </message>
        <message>
            <source>Address</source>
            <translation>地址</translation>
        </message>
        <message>
            <source>Address to give other programs</source>
            <translation>提供给其他程序的地址</translation>
        </message>
        <message>
            <source>Copy the address</source>
            <translation>复制地址</translation>
        </message>
        <message>
            <source>Port</source>
            <translation>端口</translation>
        </message>
        <message>
            <source>API key</source>
            <translation>API 密钥</translation>
        </message>
        <message>
            <source>None</source>
            <translation>无</translation>
        </message>
        <message>
            <source>Copy the API key</source>
            <translation>复制 API 密钥</translation>
        </message>
        <message>
            <source>Generate a key</source>
            <translation>生成密钥</translation>
        </message>
        <message>
            <source>Show the key</source>
            <translation>显示密钥</translation>
        </message>
        <message>
            <source>The server listens on this computer only (127.0.0.1). Without a key, any program here may use it; with one, programs send it as their API key.</source>
            <translation>服务器仅在本计算机上监听（127.0.0.1）。未设置密钥时，本机的任何程序都可以使用它；设置密钥后，程序需将其作为 API 密钥发送。</translation>
        </message>
    </context>
    <context>
        <name>SidePanel</name>
        <message>
            <source>Model and performance</source>
            <translation>模型与性能</translation>
        </message>
        <message>
            <source>Model</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>Load a model</source>
            <translation>加载模型</translation>
        </message>
        <message>
            <source>Live</source>
            <translation>实时</translation>
        </message>
        <message>
            <source>Memory and speed</source>
            <translation>内存与速度</translation>
        </message>
        <message>
            <source>Adapters</source>
            <translation>适配器</translation>
        </message>
        <message>
            <source>LoRA adapters</source>
            <translation>LoRA 适配器</translation>
        </message>
    </context>
    <context>
        <name>Sidebar</name>
        <message>
            <source>Conversations</source>
            <translation>对话</translation>
        </message>
        <message>
            <source>New chat</source>
            <translation>新对话</translation>
        </message>
        <message>
            <source>New chat (Ctrl+N)</source>
            <translation>新对话（Ctrl+N）</translation>
        </message>
        <message>
            <source>Search conversations (Ctrl+F)</source>
            <translation>搜索对话（Ctrl+F）</translation>
        </message>
        <message>
            <source>Search conversations</source>
            <translation>搜索对话</translation>
        </message>
        <message>
            <source>Conversation list</source>
            <translation>对话列表</translation>
        </message>
        <message>
            <source>Actions for %1</source>
            <translation>%1 的操作</translation>
        </message>
        <message>
            <source>Rename…</source>
            <translation>重命名…</translation>
        </message>
        <message>
            <source>Export as Markdown…</source>
            <translation>导出为 Markdown…</translation>
        </message>
        <message>
            <source>Export as JSON…</source>
            <translation>导出为 JSON…</translation>
        </message>
        <message>
            <source>Delete</source>
            <translation>删除</translation>
        </message>
        <message>
            <source>Nothing found.</source>
            <translation>未找到任何内容。</translation>
        </message>
        <message>
            <source>Your conversations will appear here.</source>
            <translation>您的对话将显示在这里。</translation>
        </message>
        <message>
            <source>Import…</source>
            <translation>导入…</translation>
        </message>
        <message>
            <source>Import a conversation from JSON</source>
            <translation>从 JSON 导入对话</translation>
        </message>
        <message>
            <source>Models</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>Open the model library</source>
            <translation>打开模型库</translation>
        </message>
        <message>
            <source>Rename conversation</source>
            <translation>重命名对话</translation>
        </message>
        <message>
            <source>Conversation title</source>
            <translation>对话标题</translation>
        </message>
    </context>
    <context>
        <name>UndoBar</name>
        <message>
            <source>Deleted “%1”</source>
            <translation>已删除“%1”</translation>
        </message>
        <message>
            <source>Undo</source>
            <translation>撤销</translation>
        </message>
        <message>
            <source>Undo the deletion</source>
            <translation>撤销删除</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::AdapterList</name>
        <message>
            <source>%1 no longer exists.</source>
            <translation>%1 已不存在。</translation>
        </message>
        <message>
            <source>%1 cannot be applied to the loaded model: %2</source>
            <translation>%1 无法应用于已加载的模型：%2</translation>
        </message>
        <message numerus="yes">
            <source>At most %n adapter(s) can be applied at once: switch one off first.</source>
            <translation>
                <numerusform>最多可同时应用 %n 个适配器：请先关闭一个。</numerusform>
            </translation>
        </message>
        <message>
            <source>%1 does not exist.</source>
            <translation>%1 不存在。</translation>
        </message>
        <message>
            <source>%1 is not a LoRA adapter: choose a folder with adapter_config.json or a GGUF adapter file.</source>
            <translation>%1 不是 LoRA 适配器：请选择包含 adapter_config.json 的文件夹或 GGUF 适配器文件。</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::ChatSession</name>
        <message>
            <source>Load a model first: choose one in the model bar or the library.</source>
            <translation>请先加载模型：在模型栏或模型库中选择一个。</translation>
        </message>
        <message>
            <source>The model is busy or not loaded.</source>
            <translation>模型正忙或尚未加载。</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::ConversationList</name>
        <message>
            <source>Today</source>
            <translation>今天</translation>
        </message>
        <message>
            <source>Yesterday</source>
            <translation>昨天</translation>
        </message>
        <message>
            <source>Previous 7 days</source>
            <translation>过去 7 天</translation>
        </message>
        <message>
            <source>Previous 30 days</source>
            <translation>过去 30 天</translation>
        </message>
        <message>
            <source>Older</source>
            <translation>更早</translation>
        </message>
        <message>
            <source>New chat</source>
            <translation>新对话</translation>
        </message>
        <message>
            <source>Cannot read %1: %2</source>
            <translation>无法读取 %1：%2</translation>
        </message>
        <message>
            <source>%1 is too large to be a conversation export.</source>
            <translation>%1 太大，不可能是导出的对话。</translation>
        </message>
        <message>
            <source>%1 is not a conversation Hearth can import: %2</source>
            <translation>%1 不是 Hearth 可以导入的对话：%2</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::EngineController</name>
        <message>
            <source>The model could not be loaded.</source>
            <translation>无法加载模型。</translation>
        </message>
        <message>
            <source>Starting</source>
            <translation>正在启动</translation>
        </message>
        <message>
            <source>The answer could not be generated.</source>
            <translation>无法生成回答。</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::LanguageManager</name>
        <message>
            <source>System language</source>
            <translation>系统语言</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::ModelLibrary</name>
        <message>
            <source>%1 does not exist.</source>
            <translation>%1 不存在。</translation>
        </message>
        <message>
            <source>%1 is neither a .gguf file nor a model folder (a folder with config.json).</source>
            <translation>%1 既不是 .gguf 文件，也不是模型文件夹（包含 config.json 的文件夹）。</translation>
        </message>
        <message>
            <source>%1 is a LoRA adapter, not a model: add it in the Adapters tab.</source>
            <translation>%1 是 LoRA 适配器而不是模型：请在“适配器”标签页中添加。</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::QuantizeForm</name>
        <message>
            <source>Choose a model to quantize.</source>
            <translation>请选择要量化的模型。</translation>
        </message>
        <message>
            <source>Reading the model…</source>
            <translation>正在读取模型…</translation>
        </message>
        <message>
            <source>Choose EXL2 or GPTQ.</source>
            <translation>请选择 EXL2 或 GPTQ。</translation>
        </message>
        <message>
            <source>Head bits must be 2, 3, 4, 5, 6 or 8.</source>
            <translation>输出头位数必须为 2、3、4、5、6 或 8。</translation>
        </message>
        <message>
            <source>Choose between 2.0 and 8.0 bits per weight.</source>
            <translation>请选择每权重 2.0 到 8.0 位之间的值。</translation>
        </message>
        <message>
            <source>GPTQ bits must be 2, 3, 4 or 8.</source>
            <translation>GPTQ 位数必须为 2、3、4 或 8。</translation>
        </message>
        <message>
            <source>The group size must be positive, or −1 for one group per column.</source>
            <translation>组大小必须为正数，或为 −1 表示每列一组。</translation>
        </message>
        <message>
            <source>Working out the size…</source>
            <translation>正在估算大小…</translation>
        </message>
        <message>
            <source>The size cannot be estimated: %1</source>
            <translation>无法估算大小：%1</translation>
        </message>
        <message>
            <source>This model needs at least %1 bits per weight (the cheapest setting of every layer).</source>
            <translation>此模型至少需要每权重 %1 位（即每一层最省空间的设置）。</translation>
        </message>
        <message>
            <source>%1 does not exist.</source>
            <translation>%1 不存在。</translation>
        </message>
        <message>
            <source>%1 is not a file.</source>
            <translation>%1 不是文件。</translation>
        </message>
        <message>
            <source>Calibration text must be a .txt, .md or .jsonl file.</source>
            <translation>校准文本必须是 .txt、.md 或 .jsonl 文件。</translation>
        </message>
        <message>
            <source>%1 cannot be read.</source>
            <translation>无法读取 %1。</translation>
        </message>
        <message>
            <source>%1 is empty.</source>
            <translation>%1 为空。</translation>
        </message>
        <message>
            <source>Choose where to write the quantized model.</source>
            <translation>请选择量化模型的写入位置。</translation>
        </message>
        <message>
            <source>The output folder must be a full path, such as %1.</source>
            <translation>输出文件夹必须是完整路径，例如 %1。</translation>
        </message>
        <message>
            <source>%1 exists and is not a folder.</source>
            <translation>%1 已存在且不是文件夹。</translation>
        </message>
        <message>
            <source>%1 exists and is not empty: choose another folder.</source>
            <translation>%1 已存在且不为空：请选择其他文件夹。</translation>
        </message>
        <message>
            <source>%1 is not writable.</source>
            <translation>%1 不可写入。</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::QuantizeJobs</name>
        <message>
            <source>“%1” is loaded on the GPU. Starting the job unloads it, so that the quantizer has the GPU's memory; while the job runs, models load on the CPU only.</source>
            <translation>“%1”已加载在 GPU 上。开始任务时会将其卸载，以便量化器使用 GPU 显存；任务运行期间，模型只能在 CPU 上加载。</translation>
        </message>
        <message>
            <source>While the job runs, models load on the CPU only: the quantizer needs the GPU's memory.</source>
            <translation>任务运行期间，模型只能在 CPU 上加载：量化器需要 GPU 显存。</translation>
        </message>
        <message>
            <source>The job uses every CPU core: a model answering on the CPU is slower until it finishes.</source>
            <translation>任务会使用所有 CPU 核心：在它完成之前，在 CPU 上回答的模型会变慢。</translation>
        </message>
        <message>
            <source>A quantization job is already running.</source>
            <translation>已有一个量化任务正在运行。</translation>
        </message>
        <message>
            <source>No CUDA GPU is available here (no device, no driver, or a build without CUDA): quantize on the CPU.</source>
            <translation>此处没有可用的 CUDA GPU（没有设备、没有驱动程序，或此版本不含 CUDA）：请在 CPU 上量化。</translation>
        </message>
        <message>
            <source>The chat model is busy. Wait until it has finished answering or loading, or stop it, then start the job.</source>
            <translation>聊天模型正忙。请等待它完成回答或加载，或将其停止，然后再开始任务。</translation>
        </message>
        <message>
            <source>Choose the GPU or the CPU.</source>
            <translation>请选择 GPU 或 CPU。</translation>
        </message>
        <message>
            <source>Unloading the chat model to free the GPU…</source>
            <translation>正在卸载聊天模型以释放 GPU…</translation>
        </message>
        <message>
            <source>The GPU is in use by a quantization job. Load the model on the CPU, or wait until the job has finished or is cancelled.</source>
            <translation>GPU 正被量化任务占用。请在 CPU 上加载模型，或等待任务完成或被取消。</translation>
        </message>
        <message>
            <source>Stopped before the job began.</source>
            <translation>在任务开始前已停止。</translation>
        </message>
        <message>
            <source>Stopped. The work done so far is kept in %1.</source>
            <translation>已停止。目前的进度保存在 %1 中。</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::QuantizeWizard</name>
        <message>
            <source>Choose a model to quantize.</source>
            <translation>请选择要量化的模型。</translation>
        </message>
        <message>
            <source>This model cannot be read: %1</source>
            <translation>无法读取此模型：%1</translation>
        </message>
        <message>
            <source>The quantizer cannot take this model: %1</source>
            <translation>量化器无法处理此模型：%1</translation>
        </message>
        <message>
            <source>EXL2, %1 bits per weight, head %2 bits</source>
            <translation>EXL2，每权重 %1 位，输出头 %2 位</translation>
        </message>
        <message>
            <source>GPTQ, %1 bits, one group per column</source>
            <translation>GPTQ，%1 位，每列一组</translation>
        </message>
        <message>
            <source>GPTQ, %1 bits, group size %2</source>
            <translation>GPTQ，%1 位，组大小 %2</translation>
        </message>
        <message>
            <source>An interrupted job is writing to this folder: resume it or discard it first.</source>
            <translation>有一个已中断的任务正在写入此文件夹：请先继续或丢弃它。</translation>
        </message>
    </context>
    <context>
        <name>hearth::app::UiHelpers</name>
        <message>
            <source>%1 B</source>
            <comment>billions, e.g. of parameters</comment>
            <translation>%1B</translation>
        </message>
        <message>
            <source>%1 M</source>
            <comment>millions, e.g. of parameters</comment>
            <translation>%1M</translation>
        </message>
        <message>
            <source>%1 K</source>
            <comment>thousands</comment>
            <translation>%1K</translation>
        </message>
    </context>
    <context>
        <name>main</name>
        <message>
            <source>Run large language models on your own computer.</source>
            <translation>在您自己的电脑上运行大型语言模型。</translation>
        </message>
        <message>
            <source>Load this model at start.</source>
            <translation>启动时加载此模型。</translation>
        </message>
        <message>
            <source>Send this message once the model is loaded.</source>
            <translation>模型加载后发送此消息。</translation>
        </message>
        <message>
            <source>After the answer, save the window to this PNG and quit.</source>
            <translation>回答完成后将窗口保存为此 PNG 文件并退出。</translation>
        </message>
        <message>
            <source>cpu or gpu.</source>
            <translation>cpu 或 gpu。</translation>
        </message>
        <message>
            <source>Seconds the scripted session may take.</source>
            <translation>脚本化会话允许的秒数。</translation>
        </message>
        <message>
            <source>Open the quantization wizard on this model, save screenshots named after --screenshot and quit.</source>
            <translation>用此模型打开量化向导，按 --screenshot 指定的名称保存截图，然后退出。</translation>
        </message>
        <message>
            <source>With --wizard-demo: also quantize, to the result.</source>
            <translation>与 --wizard-demo 一起使用：同时执行量化，直到得出结果。</translation>
        </message>
    </context>
</TS>
