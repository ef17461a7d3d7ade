-- codeask for Neovim 0.11+: the language server, :CodeaskAsk and :CodeaskExplain.
-- Put this file in your config (e.g. ~/.config/nvim/plugin/codeask.lua) or `dofile` it.
-- Optional before loading: vim.g.codeask_cmd (default {'codeask', 'serve'}) and
-- vim.g.codeask_settings (the `codeask` settings, camelCase as in VS Code).

local settings = vim.g.codeask_settings or {
  -- llm = { provider = 'openai', model = 'gpt-5.4-mini' },  -- keys: OPENAI_API_KEY in the environment
  retrieval = { topK = 20, maxFiles = 8 },
  hover = { enabled = true },
}

vim.lsp.config('codeask', {
  cmd = vim.g.codeask_cmd or { 'codeask', 'serve' },
  filetypes = { 'python', 'javascript', 'typescript', 'typescriptreact', 'go', 'rust', 'java',
                'c', 'cpp', 'ruby', 'lua', 'sh', 'markdown', 'toml', 'yaml', 'json' },
  root_markers = { '.codeask.toml', '.git', 'pyproject.toml', 'package.json', 'go.mod', 'Cargo.toml' },
  init_options = settings,               -- read at startup
  settings = { codeask = settings },     -- answered to workspace/configuration (section "codeask")
})
vim.lsp.enable('codeask')

local M = {}

local function client()
  return vim.lsp.get_clients({ name = 'codeask' })[1]
end

local function show(markdown)
  vim.lsp.util.open_floating_preview(vim.split(markdown or '', '\n'), 'markdown',
    { border = 'rounded', max_width = 100, max_height = 40, focus_id = 'codeask' })
end

-- Quickfix items from the LSP Locations of a codeask.ask / codeask.explain result.
function M.qf_items(result)
  local items = {}
  for i, loc in ipairs(result.locations or {}) do
    local src = (result.sources or {})[i] or {}
    table.insert(items, {
      filename = vim.uri_to_fname(loc.uri),
      lnum = loc.range.start.line + 1,       -- LSP lines are 0-based
      col = loc.range.start.character + 1,
      text = (src.symbol and src.symbol ~= '') and src.symbol or (src.path or ''),
    })
  end
  return items
end

-- Ask a question; fills the quickfix list with the sources and shows the answer in a float.
-- `on_done(err, result)` is optional.
function M.ask(question, on_done)
  local c = client()
  if not c then
    vim.notify('codeask: the language server is not running', vim.log.levels.ERROR)
    return
  end
  c:request('workspace/executeCommand', { command = 'codeask.ask', arguments = { question } }, function(err, result)
    if err then
      vim.notify('codeask: ' .. err.message, vim.log.levels.ERROR)
    else
      vim.fn.setqflist({}, ' ', { title = 'codeask: ' .. question, items = M.qf_items(result) })
      show(result.markdown)
    end
    if on_done then on_done(err, result) end
  end)
end

-- Explain lines `line1`..`line2` (1-based) of the current buffer.
function M.explain(line1, line2)
  local c = client()
  if not c then return end
  local range = { start = { line = line1 - 1, character = 0 }, ['end'] = { line = line2, character = 0 } }
  c:request('workspace/executeCommand',
    { command = 'codeask.explain', arguments = { vim.uri_from_bufnr(0), range } }, function(err, result)
      if err then
        vim.notify('codeask: ' .. err.message, vim.log.levels.ERROR)
        return
      end
      vim.fn.setqflist({}, ' ', { title = 'codeask: related code', items = M.qf_items(result) })
      show(result.markdown)
    end)
end

vim.api.nvim_create_user_command('CodeaskAsk', function(opts) M.ask(opts.args) end,
  { nargs = '+', desc = 'Ask codeask a question about the workspace' })
vim.api.nvim_create_user_command('CodeaskExplain', function(opts) M.explain(opts.line1, opts.line2) end,
  { range = true, desc = 'Explain the selected lines with codeask' })

_G.Codeask = M
return M
