-- The frame of every tests/nvim/test_*.lua script: run(name, body) calls body(), which returns the
-- results table (and the codeask LSP client, if it started one); the results are written as JSON
-- to CODEASK_NVIM_OUT and the client is stopped. Any error exits Neovim with code 1 (cquit), with
-- "<name> failed: <error>" on stderr, instead of hanging; success exits with 0.
local M = {}

function M.run(name, body)
  local ok, err = pcall(function()
    local out, client = body()
    local f = assert(io.open(os.getenv('CODEASK_NVIM_OUT'), 'w'))
    f:write(vim.json.encode(out))
    f:close()
    if client then
      client:stop()
      vim.wait(5000, function() return client:is_stopped() end, 50)
    end
  end)
  if not ok then
    io.stderr:write(name .. ' failed: ' .. tostring(err) .. '\n')
    vim.cmd('cquit 1')
  end
  vim.cmd('qall!')
end

return M
